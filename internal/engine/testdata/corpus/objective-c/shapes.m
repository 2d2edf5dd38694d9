/* Shapes: a class hierarchy rooted in the runtime's Object (no Foundation),
 * a protocol, a category, dynamic dispatch through id, and introspection
 * with the runtime's functions. */
#import <math.h>
#import <stdio.h>
#import <stdlib.h>
#import <objc/Object.h>
#import <objc/runtime.h>

/* Object has no allocation methods of its own: give every class +alloc,
 * +new, -init and -free in a category, as a Foundation's NSObject would. */
@interface Object (Lifecycle)
+ (id)alloc;
+ (id)new;
- (id)init;
- (void)free;
- (const char *)className;
- (BOOL)respondsTo:(SEL)selector;
@end

@implementation Object (Lifecycle)
+ (id)alloc
{
    return class_createInstance(self, 0);
}
+ (id)new
{
    return [[self alloc] init];
}
- (id)init
{
    return self;
}
- (void)free
{
    object_dispose(self);
}
- (const char *)className
{
    return class_getName(object_getClass(self));
}
- (BOOL)respondsTo:(SEL)selector
{
    return class_respondsToSelector(object_getClass(self), selector);
}
@end

@protocol Scalable
- (void)scaleBy:(double)factor;
@end

@interface Shape : Object
{
    const char *label;
}
- (id)initWithLabel:(const char *)aLabel;
- (double)area;
- (double)perimeter;
- (void)describe;
@end

@implementation Shape
- (id)initWithLabel:(const char *)aLabel
{
    if ((self = [super init])) {
        label = aLabel;
    }
    return self;
}
- (double)area
{
    return 0;
}
- (double)perimeter
{
    return 0;
}
- (void)describe
{
    printf("%-8s %-9s area %7.2f  perimeter %6.2f\n",
           label, [self className], [self area], [self perimeter]);
}
@end

@interface Circle : Shape <Scalable>
{
    double radius;
}
+ (id)circle:(const char *)aLabel radius:(double)r;
@end

@implementation Circle
+ (id)circle:(const char *)aLabel radius:(double)r
{
    Circle *c = [[self alloc] initWithLabel:aLabel];
    c->radius = r;
    return c;
}
- (double)area
{
    return M_PI * radius * radius;
}
- (double)perimeter
{
    return 2 * M_PI * radius;
}
- (void)scaleBy:(double)factor
{
    radius *= factor;
}
@end

@interface Rectangle : Shape <Scalable>
{
    double width, height;
}
+ (id)rectangle:(const char *)aLabel width:(double)w height:(double)h;
@end

@implementation Rectangle
+ (id)rectangle:(const char *)aLabel width:(double)w height:(double)h
{
    Rectangle *r = [[self alloc] initWithLabel:aLabel];
    r->width = w;
    r->height = h;
    return r;
}
- (double)area
{
    return width * height;
}
- (double)perimeter
{
    return 2 * (width + height);
}
- (void)scaleBy:(double)factor
{
    width *= factor;
    height *= factor;
}
@end

/* A square is a rectangle whose sides stay equal; it inherits the rest. */
@interface Square : Rectangle
+ (id)square:(const char *)aLabel side:(double)s;
@end

@implementation Square
+ (id)square:(const char *)aLabel side:(double)s
{
    return [self rectangle:aLabel width:s height:s];
}
@end

/* A triangle, from its three sides (Heron's formula), cannot be scaled. */
@interface Triangle : Shape
{
    double a, b, c;
}
+ (id)triangle:(const char *)aLabel sides:(double)x :(double)y :(double)z;
@end

@implementation Triangle
+ (id)triangle:(const char *)aLabel sides:(double)x :(double)y :(double)z
{
    Triangle *t = [[self alloc] initWithLabel:aLabel];
    t->a = x;
    t->b = y;
    t->c = z;
    return t;
}
- (double)perimeter
{
    return a + b + c;
}
- (double)area
{
    double s = [self perimeter] / 2;
    return sqrt(s * (s - a) * (s - b) * (s - c));
}
@end

static int byArea(const void *x, const void *y)
{
    double ax = [*(id const *)x area], ay = [*(id const *)y area];
    return (ax > ay) - (ax < ay);
}

int main(void)
{
    id shapes[] = {
        [Circle circle:"wheel" radius:1.5],
        [Rectangle rectangle:"door" width:0.9 height:2.1],
        [Square square:"tile" side:0.3],
        [Triangle triangle:"sail" sides:3 :4 :5],
    };
    const int count = sizeof shapes / sizeof shapes[0];

    qsort(shapes, count, sizeof shapes[0], byArea);
    printf("by area:\n");
    for (int i = 0; i < count; i++) {
        [shapes[i] describe];
    }

    printf("doubled where scalable:\n");
    double total = 0;
    for (int i = 0; i < count; i++) {
        id shape = shapes[i];
        if ([shape respondsTo:@selector(scaleBy:)]) {
            [shape scaleBy:2];
        } else {
            printf("  %s does not scale\n", [shape className]);
        }
        total += [shape area];
    }
    printf("total area now %.2f\n", total);

    printf("a Square is a kind of %s, which is a kind of %s\n",
           class_getName(class_getSuperclass([Square class])),
           class_getName(class_getSuperclass(class_getSuperclass([Square class]))));

    for (int i = 0; i < count; i++) {
        [shapes[i] free];
    }
    return 0;
}
