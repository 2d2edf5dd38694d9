(ns inventory.core
  (:require [clojure.string :as str]))

(def items
  [{:name "apple" :kind :fruit :price 0.5}
   {:name "leek" :kind :veg :price 1.25}
   {:name "pear" :kind :fruit :price 0.75}])

(defn total-by-kind [items]
  (->> items
       (group-by :kind)
       (map (fn [[kind xs]] [kind (reduce + (map :price xs))]))
       (into (sorted-map))))

(defn -main [& args]
  (doseq [[kind total] (total-by-kind items)]
    (println (name kind) (format "%.2f" total)))
  (println (str/join "," (map :name (sort-by :price > items))))
  (println "args:" (count args)))
