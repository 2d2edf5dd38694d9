;;; wordfreq.el --- Word frequencies of standard input  -*- lexical-binding: t; -*-

;;; Commentary:
;; Reads standard input line by line (`read-from-minibuffer' reads stdin in
;; batch mode), counts words in a hash table and prints the most frequent.

;;; Code:

(require 'cl-lib)
(require 'seq)

(defun wordfreq-read-lines ()
  "Return the lines of standard input, in order."
  (let (lines line)
    (while (setq line (ignore-errors (read-from-minibuffer "")))
      (push line lines))
    (nreverse lines)))

(defun wordfreq-count (lines)
  "Return a hash table of the words of LINES and their counts."
  (let ((counts (make-hash-table :test #'equal)))
    (dolist (line lines counts)
      (dolist (word (split-string (downcase line) "[^a-z']+" t))
        (cl-incf (gethash word counts 0))))))

(defun wordfreq-sorted (counts)
  "Return COUNTS as (WORD . N) pairs, most frequent first, ties alphabetical."
  (let (pairs)
    (maphash (lambda (word n) (push (cons word n) pairs)) counts)
    (sort pairs (lambda (a b)
                  (if (= (cdr a) (cdr b))
                      (string< (car a) (car b))
                    (> (cdr a) (cdr b)))))))

(let* ((counts (wordfreq-count (wordfreq-read-lines)))
       (pairs (wordfreq-sorted counts)))
  (pcase-dolist (`(,word . ,n) (seq-take pairs 5))
    (princ (format "%-10s %d\n" word n)))
  (princ (format "%d words, %d distinct\n"
                 (apply #'+ (mapcar #'cdr pairs))
                 (hash-table-count counts))))

;;; wordfreq.el ends here
