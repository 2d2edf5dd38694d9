;; Word frequencies of standard input, most frequent first, ties alphabetical.
(import sys re
        collections [Counter])

(setv counts (Counter))
(for [line sys.stdin]
  (.update counts (re.findall r"[a-z']+" (.lower line))))

(setv ranked (sorted (.items counts) :key (fn [pair] #((- (get pair 1)) (get pair 0)))))
(for [[word n] (cut ranked 5)]
  (print f"{word :<10} {n}"))
(print f"{(sum (.values counts))} words, {(len counts)} distinct")
