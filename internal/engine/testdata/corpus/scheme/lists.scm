(import (chezscheme))

(define (sum lst) (fold-left + 0 lst))

(define (range a b)
  (let loop ([i (- b 1)] [acc '()])
    (if (< i a) acc (loop (- i 1) (cons i acc)))))

(define squares (map (lambda (x) (* x x)) (range 1 6)))
(printf "squares: ~a~%" squares)
(printf "sum: ~a~%" (sum squares))
(printf "evens: ~a~%" (filter even? (range 1 11)))
(printf "sorted: ~a~%" (list-sort < '(5 3 9 1)))

(define-record-type point (fields x y))
(let ([p (make-point 3 4)])
  (printf "point: ~a,~a~%" (point-x p) (point-y p)))
