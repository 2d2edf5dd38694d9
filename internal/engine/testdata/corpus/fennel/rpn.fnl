;; A stack "class" built on a metatable, and an RPN calculator that uses it,
;; with `case` for dispatch and `pcall` for errors.

(local Stack {})
(set Stack.__index Stack)

(fn Stack.new []
  (setmetatable {:items [] :size 0} Stack))

(fn Stack.push [self x]
  (set self.size (+ self.size 1))
  (tset self.items self.size x))

(fn Stack.pop [self]
  (when (= self.size 0)
    (error "stack underflow" 0))
  (let [x (. self.items self.size)]
    (tset self.items self.size nil)
    (set self.size (- self.size 1))
    x))

(local ops {"+" #(+ $1 $2) "-" #(- $1 $2) "*" #(* $1 $2) "/" #(/ $1 $2) "^" #(^ $1 $2)})

(fn rpn [expr]
  (let [stack (Stack.new)]
    (each [token (expr:gmatch "%S+")]
      (case (. ops token)
        op (let [b (stack:pop)
                 a (stack:pop)]
             (stack:push (op a b)))
        nil (stack:push (or (tonumber token) (error (.. "bad token " token) 0)))))
    (stack:pop)))

(each [_ expr (ipairs ["3 4 +" "5 1 2 + 4 * + 3 -" "2 10 ^ 24 -" "1 +" "2 x *"])]
  (case (pcall rpn expr)
    (true value) (print (string.format "%-20s = %g" expr value))
    (false err) (print (string.format "%-20s ! %s" expr err))))

(local tens (icollect [_ x (ipairs [1 2 3 4 5 6])]
              (when (= 0 (% x 2)) (* x 10))))
(print (table.concat tens ", "))

(local positions (collect [i name (ipairs [:lua :fennel :janet])] name i))
(print (.. "fennel is at " positions.fennel))
