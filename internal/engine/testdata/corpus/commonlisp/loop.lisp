(defstruct point x y)

(defun distance (a b)
  (sqrt (+ (expt (- (point-x a) (point-x b)) 2)
           (expt (- (point-y a) (point-y b)) 2))))

(let ((origin (make-point :x 0 :y 0))
      (p (make-point :x 3 :y 4)))
  (format t "distance: ~,1F~%" (distance origin p)))

(format t "squares: ~{~A~^, ~}~%"
        (loop for i from 1 to 5 collect (* i i)))

(format t "evens summed: ~D~%"
        (loop for i from 1 to 10 when (evenp i) sum i))

(let ((table (make-hash-table :test #'equal)))
  (dolist (w '("a" "b" "a" "c" "a"))
    (incf (gethash w table 0)))
  (format t "a appears ~D times~%" (gethash "a" table)))
