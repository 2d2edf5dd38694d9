data class Order(val customer: String, val item: String, val qty: Int)

fun String.shout() = toUpperCase() + "!"

fun main() {
    val orders = listOf(
        Order("ann", "pen", 2),
        Order("bob", "ink", 1),
        Order("ann", "pad", 3)
    )
    val perCustomer = orders.groupBy { it.customer }
        .mapValues { (_, os) -> os.sumBy { it.qty } }
        .toSortedMap()
    perCustomer.forEach { (name, qty) -> println("$name: $qty") }

    val biggest = orders.maxBy { it.qty }
    println("biggest: ${biggest?.item}")

    for (o in orders) {
        val size = when {
            o.qty >= 3 -> "large"
            o.qty == 2 -> "medium"
            else -> "small"
        }
        println("${o.item} is $size")
    }
    println("done".shout())
}
