import std.stdio : writeln;

struct Vec(T)
{
    T x, y;

    Vec opBinary(string op)(Vec rhs) const if (op == "+" || op == "-")
    {
        return Vec(mixin("x " ~ op ~ " rhs.x"), mixin("y " ~ op ~ " rhs.y"));
    }
}

int main(string[] args)
{
    scope (exit) writeln("bye");
    auto a = Vec!int(1, 2), b = Vec!int(3, 5);
    auto c = a + b, d = b - a;
    writeln(c.x, ",", c.y, " ", d.x, ",", d.y);
    try
    {
        throw new Exception("conversion failed");
    }
    catch (Exception e)
    {
        writeln(e.msg);
    }
    return 0;
}
