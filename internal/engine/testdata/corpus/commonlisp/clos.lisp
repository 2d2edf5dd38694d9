(defclass animal ()
  ((name :initarg :name :reader name)))

(defclass dog (animal) ())
(defclass cat (animal) ())

(defgeneric speak (animal))
(defmethod speak ((a dog)) (format nil "~A says woof" (name a)))
(defmethod speak ((a cat)) (format nil "~A says meow" (name a)))

(dolist (a (list (make-instance 'dog :name "Rex")
                 (make-instance 'cat :name "Tom")))
  (write-line (speak a)))

(defmacro with-twice (&body body)
  `(progn ,@body ,@body))

(with-twice (princ "hi "))
(terpri)

(handler-case (/ 1 0)
  (division-by-zero () (write-line "caught division by zero")))
