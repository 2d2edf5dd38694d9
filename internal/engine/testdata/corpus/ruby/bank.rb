class InsufficientFunds < StandardError; end

class Account
  attr_reader :owner, :balance

  def initialize(owner, balance = 0)
    @owner = owner
    @balance = balance
  end

  def withdraw(amount)
    raise InsufficientFunds, "#{owner} has only #{balance}" if amount > balance

    @balance -= amount
    self
  end

  def to_s = "#{owner}: #{format('%.2f', balance)}"
end

Point = Struct.new(:x, :y) do
  def +(other) = Point.new(x + other.x, y + other.y)
end

acct = Account.new("ada", 100)
puts acct.withdraw(30)
begin
  acct.withdraw(500)
rescue InsufficientFunds => e
  puts "refused: #{e.message}"
end
p Point.new(1, 2) + Point.new(3, 4)
puts %w[a b c].each_slice(2).map { |s| s.join("+") }.join(" | ")
