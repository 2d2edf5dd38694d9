sealed class Expr
data class Num(val value: Int) : Expr()
data class Add(val left: Expr, val right: Expr) : Expr()
data class Mul(val left: Expr, val right: Expr) : Expr()

fun eval(e: Expr): Int = when (e) {
    is Num -> e.value
    is Add -> eval(e.left) + eval(e.right)
    is Mul -> eval(e.left) * eval(e.right)
}

fun show(e: Expr): String = when (e) {
    is Num -> e.value.toString()
    is Add -> "(${show(e.left)} + ${show(e.right)})"
    is Mul -> "${show(e.left)} * ${show(e.right)}"
}

fun main(args: Array<String>) {
    val expr = Add(Num(2), Mul(Num(3), Num(args.firstOrNull()?.toIntOrNull() ?: 4)))
    println("${show(expr)} = ${eval(expr)}")
    val safe = listOf("1", "x", "3").mapNotNull { it.toIntOrNull() }
    println(safe)
}
