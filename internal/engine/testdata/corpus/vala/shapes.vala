// GObject classes, interfaces, properties, signals and string templates.
public interface Shape : Object {
    public abstract string name { get; }
    public abstract double area ();

    public string describe () {
        return @"$name with area $("%.2f".printf (area ()))";
    }
}

public class Circle : Object, Shape {
    public double radius { get; construct set; }
    public string name { get { return "circle"; } }

    public Circle (double radius) {
        Object (radius: radius);
    }

    public double area () {
        return Math.PI * radius * radius;
    }
}

public class Rectangle : Object, Shape {
    public double width { get; set; }
    public double height { get; set; }
    public string name { get { return width == height ? "square" : "rectangle"; } }

    public Rectangle (double width, double height) {
        this.width = width;
        this.height = height;
    }

    public double area () {
        return width * height;
    }
}

public class Canvas : Object {
    private List<Shape> shapes = new List<Shape> ();

    public signal void added (Shape shape, uint count);

    public void add (Shape shape) {
        shapes.append (shape);
        added (shape, shapes.length ());
    }

    public double total_area () {
        double total = 0;
        foreach (unowned Shape shape in shapes) {
            total += shape.area ();
        }
        return total;
    }
}

int main (string[] args) {
    var canvas = new Canvas ();
    canvas.added.connect ((shape, count) => {
        print ("#%u: %s\n", count, shape.describe ());
    });

    canvas.add (new Circle (1.0));
    canvas.add (new Rectangle (3, 4));
    canvas.add (new Rectangle (2.5, 2.5));

    var rect = new Rectangle (1, 2);
    rect.notify["width"].connect ((obj, spec) => {
        print ("%s changed to %.1f\n", spec.name, rect.width);
    });
    rect.width = 2;
    canvas.add (rect);

    print ("total area: %.3f\n", canvas.total_area ());

    Shape? shape = rect;
    if (shape is Rectangle) {
        print ("it is a %s of type %s\n", shape.name, shape.get_type ().name ());
    }
    return 0;
}
