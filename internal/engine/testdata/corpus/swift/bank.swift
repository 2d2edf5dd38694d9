// An entry point marked @main (the runner compiles a main.swift that has one
// with -parse-as-library), an actor that keeps concurrent deposits safe, a
// task group, and the program's arguments.
actor Account {
    let owner: String
    private(set) var balance = 0
    private var history: [Int] = []

    init(owner: String) {
        self.owner = owner
    }

    func deposit(_ amount: Int) {
        balance += amount
        history.append(amount)
    }

    func withdraw(_ amount: Int) throws(BankError) {
        guard amount <= balance else {
            throw .insufficientFunds(needed: amount - balance)
        }
        balance -= amount
        history.append(-amount)
    }

    var largestDeposit: Int? { history.filter { $0 > 0 }.max() }
}

enum BankError: Error {
    case insufficientFunds(needed: Int)
}

@main
struct Bank {
    static func main() async {
        let owners = CommandLine.arguments.dropFirst()
        let accounts = owners.map(Account.init(owner:))

        await withTaskGroup(of: Void.self) { group in
            for (index, account) in accounts.enumerated() {
                for amount in stride(from: 10, through: 100, by: 10) {
                    group.addTask { await account.deposit(amount * (index + 1)) }
                }
            }
        }

        for account in accounts {
            do throws(BankError) {
                try await account.withdraw(1_000)
                print("\(account.owner): withdrew 1000")
            } catch {
                switch error {
                case .insufficientFunds(let needed):
                    print("\(account.owner): cannot withdraw 1000, \(needed) short")
                }
            }
            let balance = await account.balance
            let largest = await account.largestDeposit ?? 0
            print("\(account.owner): balance \(balance), largest deposit \(largest)")
        }

        var total = 0
        for account in accounts {
            total += await account.balance
        }
        print("\(accounts.count) accounts, \(total) in all")
    }
}
