import std.algorithm : filter, map, sort, sum;
import std.array : array, join;
import std.conv : to;
import std.range : iota;
import std.stdio : writeln;

void main()
{
    auto squares = iota(1, 11).filter!(n => n % 2).map!(n => n * n).array;
    writeln(squares.map!(to!string).join(" "), " sum=", squares.sum.to!string);

    string[] names = ["walter", "andrei", "ali"];
    names.sort!((a, b) => a.length < b.length);
    writeln(names.join(", "));
}
