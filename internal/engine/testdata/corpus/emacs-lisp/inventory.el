;;; inventory.el --- Structures, pcase and seq on a small inventory  -*- lexical-binding: t; -*-

;;; Code:

(require 'cl-lib)
(require 'seq)
(require 'subr-x)

(cl-defstruct (item (:constructor item-create))
  "A line of the inventory."
  name kind price (qty 0))

(defvar inventory
  (list (item-create :name "lamp" :kind 'furniture :price 35.0 :qty 4)
        (item-create :name "desk" :kind 'furniture :price 120.0 :qty 1)
        (item-create :name "pen" :kind 'stationery :price 1.5 :qty 40)
        (item-create :name "notebook" :kind 'stationery :price 3.25 :qty 12)
        (item-create :name "kettle" :kind 'kitchen :price 22.0))
  "What is in stock.")

(defun item-value (item)
  "The value in stock of ITEM."
  (* (item-price item) (item-qty item)))

(defun item-stock-level (item)
  "A word for how much of ITEM is left."
  (pcase (item-qty item)
    (0 "out of stock")
    ((pred (> 5)) "low")
    (_ "ok")))

(dolist (item inventory)
  (princ (format "%-9s %-11s %7.2f  %s\n"
                 (item-name item) (item-kind item)
                 (item-value item) (item-stock-level item))))

(let ((groups (seq-group-by #'item-kind inventory)))
  (dolist (group (sort groups (lambda (a b) (string< (car a) (car b)))))
    (princ (format "%s: %.2f\n" (car group)
                   (apply #'+ (mapcar #'item-value (cdr group)))))))

(princ (format "most valuable: %s\n"
               (item-name (seq-reduce (lambda (best item)
                                        (if (> (item-value item) (item-value best)) item best))
                                      (cdr inventory) (car inventory)))))
(princ (format "restock: %s\n"
               (string-join (mapcar #'item-name
                                    (seq-filter (lambda (item) (< (item-qty item) 5)) inventory))
                            ", ")))

;;; inventory.el ends here
