import std.algorithm : filter, map, sum, sort;
import std.array : array;
import std.range : iota;
import std.stdio : writeln, writefln;
import std.string : format;

void main()
{
    auto squares = iota(1, 11).filter!(n => n % 2).map!(n => n * n).array;
    writeln(squares, " sum=", squares.sum);

    string[] names = ["walter", "andrei", "ali"];
    names.sort!((a, b) => a.length < b.length);
    foreach (i, name; names)
        writefln("%d: %s", i, name);
    writeln(format("%(%s, %)", names));
}
