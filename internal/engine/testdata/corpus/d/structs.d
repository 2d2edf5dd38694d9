import std.stdio;
import std.conv : to;

struct Vec(T)
{
    T x, y;

    Vec opBinary(string op)(Vec rhs) const if (op == "+" || op == "-")
    {
        return Vec(mixin("x " ~ op ~ " rhs.x"), mixin("y " ~ op ~ " rhs.y"));
    }

    string toString() const { return "(" ~ x.to!string ~ ", " ~ y.to!string ~ ")"; }
}

int main(string[] args)
{
    auto a = Vec!int(1, 2), b = Vec!int(3, 5);
    writeln(a + b, " ", b - a);
    try
    {
        auto n = "12x".to!int;
        writeln(n);
    }
    catch (Exception e)
    {
        writeln("conversion failed");
    }
    scope (exit) writeln("bye");
    return 0;
}
