fun main() {
    val name = readln()
    println("Hello, ${name.uppercase()}!")
}
