(require '[clojure.string :as str])

(defn word-freq [text]
  (->> (str/split (str/lower-case text) #"\W+")
       (remove str/blank?)
       frequencies
       (sort-by (juxt (comp - val) key))))

(let [text (slurp *in*)]
  (doseq [[w n] (take 3 (word-freq text))]
    (println w n)))

(def counter (atom 0))
(dotimes [_ 5] (swap! counter inc))
(println "counter" @counter)

(println (loop [n 5 acc 1]
           (if (zero? n) acc (recur (dec n) (* acc n)))))
