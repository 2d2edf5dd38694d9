#include <iomanip>
#include <iostream>
#include <memory>
#include <vector>

class Shape {
public:
    virtual ~Shape() = default;
    virtual double area() const = 0;
    virtual const char* name() const = 0;
};

class Circle final : public Shape {
    double r_;
public:
    explicit Circle(double r) : r_{r} {}
    double area() const override { return 3.14159265358979 * r_ * r_; }
    const char* name() const override { return "circle"; }
};

class Square final : public Shape {
    double side_;
public:
    explicit Square(double side) : side_{side} {}
    double area() const override { return side_ * side_; }
    const char* name() const override { return "square"; }
};

template <typename T>
T clamp_to(T value, T lo, T hi) { return value < lo ? lo : (value > hi ? hi : value); }

int main() {
    std::vector<std::unique_ptr<Shape>> shapes;
    shapes.push_back(std::make_unique<Circle>(1.5));
    shapes.push_back(std::make_unique<Square>(2.0));
    std::cout << std::fixed << std::setprecision(2);
    for (const auto& s : shapes) std::cout << s->name() << ' ' << s->area() << '\n';
    std::cout << clamp_to(42, 0, 10) << ' ' << clamp_to(-1.5, 0.0, 1.0) << '\n';
}
