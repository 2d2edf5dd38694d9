# Classes with inheritance, super, bound methods and string interpolation:
# the object-oriented CoffeeScript of CoffeeScript 2 (ES2015 classes).
class Shape
  constructor: (@name) ->

  area: -> throw new Error "#{@constructor.name} must define area"

  describe: => "#{@name}: area #{@area().toFixed 2}, perimeter #{@perimeter().toFixed 2}"

class Circle extends Shape
  constructor: (@radius) ->
    super 'circle'

  area: -> Math.PI * @radius ** 2
  perimeter: -> 2 * Math.PI * @radius

class Rectangle extends Shape
  constructor: (@width, @height, name = 'rectangle') ->
    super name

  area: -> @width * @height
  perimeter: -> 2 * (@width + @height)

class Square extends Rectangle
  constructor: (side) ->
    super side, side, 'square'

shapes = [
  new Circle 1
  new Rectangle 3, 4.5
  new Square 2
  new Circle 0.5
]

console.log line for line in shapes.map (s) -> s.describe()

largest = shapes.reduce (best, s) -> if s.area() > best.area() then s else best
console.log "largest: #{largest.name}"

byKind = {}
(byKind[s.name] ?= []).push s for s in shapes
for own kind, group of byKind
  total = group.reduce ((sum, s) -> sum + s.area()), 0
  console.log "#{kind} x#{group.length}, total area #{total.toFixed 2}"

try
  new Shape('blob').describe()
catch error
  console.log "refused: #{error.message}"
