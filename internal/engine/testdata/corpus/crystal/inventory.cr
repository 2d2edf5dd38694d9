# Classes, records, modules, generics and exhaustive case: Crystal's types
# with Ruby's manners.
record Item, name : String, price : Float64, quantity : Int32 do
  def total : Float64
    price * quantity
  end
end

module Describable
  abstract def describe : String

  def to_s(io : IO) : Nil
    io << describe
  end
end

enum Category
  Tool
  Food
  Toy
end

class Inventory(T)
  include Enumerable(T)
  include Describable

  getter name : String

  def initialize(@name : String)
    @items = [] of T
  end

  def <<(item : T) : self
    @items << item
    self
  end

  def each(& : T ->)
    @items.each { |item| yield item }
  end

  def describe : String
    "#{name} (#{size} items)"
  end
end

def category_of(item : Item) : Category
  case item.name
  when /hammer|wrench/ then Category::Tool
  when /apple|bread/   then Category::Food
  else                      Category::Toy
  end
end

shop = Inventory(Item).new("corner shop")
shop << Item.new("hammer", 12.5, 3) << Item.new("apple", 0.4, 120) << Item.new("yo-yo", 3.25, 8)
shop << Item.new("bread", 2.2, 15) << Item.new("wrench", 9.99, 4)

puts shop
shop.each_with_index do |item, i|
  printf("%d. %-7s %6.2f x %3d = %8.2f  %s\n", i + 1, item.name, item.price, item.quantity, item.total, category_of(item))
end

by_category = shop.group_by { |item| category_of(item) }
Category.each do |category|
  items = by_category[category]? || [] of Item
  puts "#{category.to_s.downcase}: #{items.map(&.name).join(", ")} (#{items.sum(&.total).round(2)})"
end

cheapest = shop.min_by(&.price)
puts "cheapest: #{cheapest.name}"
puts "over 20: #{shop.select { |i| i.total > 20 }.map(&.name)}"

maybe : Item? = shop.find { |i| i.name.starts_with?("z") }
puts maybe.try(&.name) || "nothing starts with z"
