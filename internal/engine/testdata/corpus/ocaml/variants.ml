type expr =
  | Num of int
  | Add of expr * expr
  | Mul of expr * expr

let rec eval = function
  | Num n -> n
  | Add (a, b) -> eval a + eval b
  | Mul (a, b) -> eval a * eval b

let rec to_string = function
  | Num n -> string_of_int n
  | Add (a, b) -> Printf.sprintf "(%s + %s)" (to_string a) (to_string b)
  | Mul (a, b) -> Printf.sprintf "%s * %s" (to_string a) (to_string b)

let () =
  let e = Add (Num 2, Mul (Num 3, Num 4)) in
  Printf.printf "%s = %d\n" (to_string e) (eval e);
  let total = List.fold_left ( + ) 0 [ 1; 2; 3; 4 ] in
  Printf.printf "total = %d\n" total;
  match List.find_opt (fun x -> x > 10) [ 1; 5; 20 ] with
  | Some x -> Printf.printf "found %d\n" x
  | None -> print_endline "none"
