module StringMap = Map.Make (String)

type person = { name : string; age : int }

let people = [ { name = "ada"; age = 36 }; { name = "alan"; age = 41 }; { name = "grace"; age = 85 } ]

let () =
  let by_name =
    List.fold_left (fun m p -> StringMap.add p.name p m) StringMap.empty people
  in
  StringMap.iter (fun k p -> Printf.printf "%s -> %d\n" k p.age) by_name;
  let older = List.filter (fun p -> p.age > 40) people |> List.map (fun p -> p.name) in
  print_endline (String.concat ", " older);
  let rec fact n = if n <= 1 then 1 else n * fact (n - 1) in
  Printf.printf "10! = %d\n" (fact 10);
  try ignore (int_of_string "abc") with Failure msg -> Printf.printf "failure: %s\n" msg
