using System;
using System.Collections.Generic;
using System.Text;

interface IShape
{
    double Area();
}

class Circle : IShape
{
    private readonly double radius;
    public Circle(double radius) { this.radius = radius; }
    public double Area() => Math.PI * radius * radius;
    public override string ToString() => $"Circle({radius})";
}

class Program
{
    static bool TryHalve(int n, out int half)
    {
        half = n / 2;
        return n % 2 == 0;
    }

    static void Main()
    {
        var shapes = new List<IShape> { new Circle(1), new Circle(2) };
        foreach (var s in shapes)
            Console.WriteLine("{0}: {1:F2}", s, s.Area());

        var sb = new StringBuilder();
        for (int i = 1; i <= 4; i++)
            sb.Append(TryHalve(i, out var h) ? $"{i}->{h} " : $"{i}:odd ");
        Console.WriteLine(sb.ToString().TrimEnd());

        try
        {
            int.Parse("nope");
        }
        catch (FormatException e)
        {
            Console.WriteLine("bad input: " + e.GetType().Name);
        }
    }
}
