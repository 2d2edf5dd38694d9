#lang racket/base
;; Structs, pattern matching, contracts and a small expression evaluator.
(require racket/match racket/contract racket/list racket/format racket/math)

(struct circle (radius) #:transparent)
(struct rect (width height) #:transparent)
(struct triangle (a b c) #:transparent)

(define/contract (area shape)
  (-> (or/c circle? rect? triangle?) real?)
  (match shape
    [(circle r) (* pi r r)]
    [(rect w h) (* w h)]
    [(triangle a b c)
     (define s (/ (+ a b c) 2))
     (sqrt (* s (- s a) (- s b) (- s c)))]))

(define shapes (list (circle 1) (rect 3 4) (triangle 3 4 5) (circle 2.5)))

(for ([s (in-list shapes)])
  (printf "~a -> ~a\n" s (~r (area s) #:precision 3)))

(printf "largest: ~a\n" (argmax area shapes))
(printf "total area: ~a\n" (~r (for/sum ([s shapes]) (area s)) #:precision 2))

;; A tiny evaluator over quoted s-expressions.
(define (evaluate expr env)
  (match expr
    [(? number? n) n]
    [(? symbol? x) (hash-ref env x (λ () (error 'evaluate "unbound: ~a" x)))]
    [`(let ([,x ,e]) ,body) (evaluate body (hash-set env x (evaluate e env)))]
    [`(,op ,args ...)
     (apply (case op [(+) +] [(-) -] [(*) *] [(/) /])
            (map (λ (a) (evaluate a env)) args))]))

(define program '(let ([x 6]) (let ([y (* x 7)]) (- y (/ x 3)))))
(printf "~s = ~a\n" program (evaluate program (hash)))

(define-values (evens odds) (partition even? (range 1 11)))
(printf "evens ~a, odds ~a\n" evens odds)
(with-handlers ([exn:fail? (λ (e) (printf "caught: ~a\n" (exn-message e)))])
  (evaluate '(+ 1 z) (hash)))
