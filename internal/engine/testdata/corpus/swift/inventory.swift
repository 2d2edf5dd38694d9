// A small inventory: a protocol with a default implementation, value types,
// an enum with associated values, generics, and errors thrown and caught.
protocol Priced {
    var name: String { get }
    var unitPriceCents: Int { get }
}

extension Priced {
    var priceLabel: String {
        let cents = unitPriceCents % 100
        return "$\(unitPriceCents / 100).\(cents < 10 ? "0" : "")\(cents)"
    }
}

struct Item: Priced, Hashable {
    let name: String
    let unitPriceCents: Int
    var quantity: Int
}

enum Movement {
    case received(String, Int)
    case sold(String, Int)
    case discontinued(String)
}

enum InventoryError: Error, CustomStringConvertible {
    case unknownItem(String)
    case insufficientStock(name: String, wanted: Int, have: Int)

    var description: String {
        switch self {
        case .unknownItem(let name):
            return "no item named \(name)"
        case let .insufficientStock(name, wanted, have):
            return "cannot sell \(wanted) \(name): only \(have) in stock"
        }
    }
}

struct Inventory {
    private(set) var items: [String: Item] = [:]

    mutating func add(_ item: Item) {
        items[item.name] = item
    }

    mutating func apply(_ movement: Movement) throws {
        switch movement {
        case let .received(name, count):
            guard items[name] != nil else { throw InventoryError.unknownItem(name) }
            items[name]!.quantity += count
        case let .sold(name, count):
            guard let item = items[name] else { throw InventoryError.unknownItem(name) }
            guard item.quantity >= count else {
                throw InventoryError.insufficientStock(name: name, wanted: count, have: item.quantity)
            }
            items[name]!.quantity -= count
        case .discontinued(let name):
            guard items.removeValue(forKey: name) != nil else { throw InventoryError.unknownItem(name) }
        }
    }

    var valueCents: Int {
        items.values.reduce(0) { $0 + $1.unitPriceCents * $1.quantity }
    }
}

func cheapest<T: Priced>(_ things: some Collection<T>) -> T? {
    things.min { $0.unitPriceCents < $1.unitPriceCents }
}

var stock = Inventory()
stock.add(Item(name: "widget", unitPriceCents: 250, quantity: 10))
stock.add(Item(name: "gadget", unitPriceCents: 1299, quantity: 3))
stock.add(Item(name: "gizmo", unitPriceCents: 75, quantity: 40))

let movements: [Movement] = [
    .sold("widget", 4),
    .received("gadget", 2),
    .sold("gadget", 9),
    .sold("sprocket", 1),
    .discontinued("gizmo"),
    .sold("gadget", 5),
]

for movement in movements {
    do {
        try stock.apply(movement)
        print("ok:     \(movement)")
    } catch let error as InventoryError {
        print("failed: \(movement): \(error)")
    }
}

for item in stock.items.values.sorted(by: { $0.name < $1.name }) {
    print("\(item.name): \(item.quantity) at \(item.priceLabel)")
}
if let item = cheapest(stock.items.values) {
    print("cheapest: \(item.name) (\(item.priceLabel))")
}
print("stock value: \(Item(name: "total", unitPriceCents: stock.valueCents, quantity: 1).priceLabel)")
