package geometry

import scala.annotation.tailrec
import scala.util.{Failure, Success, Try}

sealed trait Shape {
  def area: Double
}
case class Circle(radius: Double) extends Shape {
  def area: Double = math.Pi * radius * radius
}
case class Rect(width: Double, height: Double) extends Shape {
  def area: Double = width * height
}
case object Dot extends Shape {
  val area = 0.0
}

object Shapes {
  implicit class RichDouble(val d: Double) extends AnyVal {
    def rounded(places: Int): BigDecimal = BigDecimal(d).setScale(places, BigDecimal.RoundingMode.HALF_UP)
  }

  def describe(s: Shape): String = s match {
    case Circle(r) if r > 10 => s"big circle r=$r"
    case Circle(r)           => s"circle r=$r"
    case Rect(w, h) if w == h => s"square ${w}x$h"
    case Rect(w, h)          => s"rect ${w}x$h"
    case Dot                 => "dot"
  }

  def parse(spec: String): Either[String, Shape] = spec.split(":").toList match {
    case "circle" :: r :: Nil => Try(r.toDouble) match {
      case Success(v) => Right(Circle(v))
      case Failure(_) => Left(s"bad radius '$r'")
    }
    case "rect" :: w :: h :: Nil => Right(Rect(w.toDouble, h.toDouble))
    case "dot" :: Nil            => Right(Dot)
    case _                       => Left(s"unknown shape '$spec'")
  }

  @tailrec
  def gcd(a: Int, b: Int): Int = if (b == 0) a else gcd(b, a % b)

  def main(args: Array[String]): Unit = {
    val specs = List("circle:1.5", "rect:2:3", "rect:4:4", "dot", "circle:12", "hexagon:1", "circle:x")
    val (errors, shapes) = specs.map(parse).partition(_.isLeft)
    for (Right(s) <- shapes) println(f"${describe(s)}%-18s area ${s.area.rounded(2)}")
    errors.collect { case Left(msg) => msg }.foreach(m => println(s"error: $m"))
    val total = shapes.collect { case Right(s) => s.area }.sum
    println(s"total area: ${total.rounded(3)}")
    println(s"gcd(84, 36) = ${gcd(84, 36)}")
    val byKind = shapes.collect { case Right(s) => s.getClass.getSimpleName.stripSuffix("$") }.groupBy(identity).mapValues(_.size)
    println(byKind.toSeq.sorted.map { case (k, n) => s"$k=$n" }.mkString(", "))
  }
}
