#lang racket
;; Word frequencies of stdin, most frequent first, ties alphabetical.

(define (tokenize line)
  (for/list ([w (in-list (string-split (string-downcase line)))])
    (string-trim w #px"[^a-z]+")))

(define counts
  (for*/fold ([counts (hash)])
             ([line (in-lines)]
              [word (in-list (tokenize line))]
              #:unless (string=? word ""))
    (hash-update counts word add1 0)))

(define ranked
  (sort (hash->list counts)
        (λ (a b) (or (> (cdr a) (cdr b))
                     (and (= (cdr a) (cdr b)) (string<? (car a) (car b)))))))

(for ([entry (in-list ranked)]
      [rank (in-naturals 1)])
  (match-define (cons word n) entry)
  (printf "~a. ~a ~a\n" rank (~a word #:min-width 8) n))

(printf "~a distinct words, ~a in all\n"
        (hash-count counts)
        (apply + (hash-values counts)))
