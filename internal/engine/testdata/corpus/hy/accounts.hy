;; A dataclass with methods, a macro, a generator and comprehensions, in Hy.
(import dataclasses [dataclass]
        itertools [islice])

(defmacro unless [test #* body]
  `(when (not ~test) ~@body))

(defclass [dataclass] Account []
  #^ str owner
  #^ int balance

  (defn deposit [self amount]
    (when (<= amount 0)
      (raise (ValueError "a deposit must be positive")))
    (+= self.balance amount)
    self)

  (defn withdraw [self amount]
    (when (> amount self.balance)
      (raise (ValueError f"{self.owner} has only {self.balance}")))
    (-= self.balance amount)
    self))

(defn fibonacci []
  (setv [a b] [0 1])
  (while True
    (yield a)
    (setv [a b] [b (+ a b)])))

(setv accounts (lfor name ["ada" "grace" "linus"] (Account name 100)))
(.deposit (get accounts 0) 50)
(.withdraw (get accounts 1) 30)
(try
  (.withdraw (get accounts 2) 500)
  (except [e ValueError]
    (print "refused:" e)))

(for [account (sorted accounts :key (fn [a] a.balance) :reverse True)]
  (print account))
(unless (any (gfor a accounts (< a.balance 0)))
  (print "no account is overdrawn"))
(print (dfor a accounts a.owner a.balance))
(print (list (islice (fibonacci) 12)))
