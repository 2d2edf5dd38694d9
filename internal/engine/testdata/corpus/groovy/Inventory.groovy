import groovy.transform.Canonical
import groovy.transform.CompileStatic

@Canonical
class Item {
    String name
    int quantity
    BigDecimal price

    BigDecimal getTotal() { price * quantity }
}

trait Describable {
    String describe() { "${this.class.simpleName}(${this.properties.findAll { it.key != 'class' }.sort()*.value.join(', ')})" }
}

class Warehouse implements Describable {
    String city
    List<Item> items = []

    Warehouse leftShift(Item item) {
        items << item
        this
    }

    String stockLevel(Item item) {
        switch (item.quantity) {
            case 0: return 'out of stock'
            case 1..5: return 'low'
            case 6..<50: return 'ok'
            default: return 'plenty'
        }
    }
}

@CompileStatic
static String money(BigDecimal amount) {
    String.format('%8.2f', amount)
}

def warehouse = new Warehouse(city: 'Lyon')
System.in.withReader { reader ->
    reader.eachLine { line ->
        def (name, qty, price) = line.tokenize(',')*.trim()
        warehouse << new Item(name: name, quantity: qty as int, price: price as BigDecimal)
    }
}

warehouse.with {
    println "Warehouse in $city, ${items.size()} items"
    items.sort { a, b -> b.total <=> a.total ?: a.name <=> b.name }.each { item ->
        println "${item.name.padRight(10)} ${item.quantity.toString().padLeft(3)} x ${money(item.price)} = ${money(item.total)}  [${stockLevel(item)}]"
    }
    println '-' * 44
    println "value: ${money(items.sum { it.total } as BigDecimal)}"
}
println new Item('bolt', 3, 0.25)
println new Warehouse(city: 'Nice').describe()
