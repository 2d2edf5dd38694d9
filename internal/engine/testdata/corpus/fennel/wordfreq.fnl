;; Word frequencies of standard input, most frequent first, ties alphabetical.

(local counts {})
(var total 0)

(each [line (io.lines)]
  (each [word (string.gmatch (line:lower) "[%a']+")]
    (set total (+ total 1))
    (tset counts word (+ 1 (or (. counts word) 0)))))

(local words (icollect [word (pairs counts)] word))
(table.sort words (fn [a b]
                    (let [ca (. counts a)
                          cb (. counts b)]
                      (if (= ca cb) (< a b) (> ca cb)))))

(for [i 1 (math.min 5 (length words))]
  (let [word (. words i)]
    (print (string.format "%-10s %d" word (. counts word)))))

(print (string.format "%d words, %d distinct" total (length words)))
