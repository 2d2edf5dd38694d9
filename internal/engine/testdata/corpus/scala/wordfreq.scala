import scala.io.Source

/** Counts words read from standard input and prints the most frequent ones. */
object WordFreq extends App {
  case class Entry(word: String, count: Int)

  val words = Source.stdin.getLines()
    .flatMap(_.toLowerCase.split("[^a-z']+"))
    .filter(_.nonEmpty)
    .toList

  val top = words
    .groupBy(identity)
    .map { case (w, ws) => Entry(w, ws.size) }
    .toList
    .sortBy(e => (-e.count, e.word))
    .take(5)

  println(s"${words.size} words, ${words.distinct.size} distinct")
  top.zipWithIndex.foreach { case (Entry(w, n), i) =>
    println(f"${i + 1}%2d. $w%-8s $n%3d ${"*" * n}")
  }

  val longest = words.foldLeft(Option.empty[String]) {
    case (None, w)                              => Some(w)
    case (Some(best), w) if w.length > best.length => Some(w)
    case (acc, _)                               => acc
  }
  println(s"longest: ${longest.getOrElse("-")}")
}
