; Structs, arrays of structs, a recursive function and a loop: the areas of
; a few rectangles, the largest, and factorials computed recursively.

%struct.rect = type { i32, i32 }

@rects = private unnamed_addr constant [4 x %struct.rect] [
  %struct.rect { i32 3, i32 4 },
  %struct.rect { i32 10, i32 2 },
  %struct.rect { i32 7, i32 7 },
  %struct.rect { i32 1, i32 12 }
]
@rect.fmt = private unnamed_addr constant [23 x i8] c"rect %d: %d x %d = %d\0A\00"
@largest.fmt = private unnamed_addr constant [28 x i8] c"largest: rect %d (area %d)\0A\00"
@fact.fmt = private unnamed_addr constant [12 x i8] c"%2d! = %ld\0A\00"

declare i32 @printf(ptr, ...)

define i32 @area(ptr %r) {
  %w.ptr = getelementptr inbounds %struct.rect, ptr %r, i32 0, i32 0
  %h.ptr = getelementptr inbounds %struct.rect, ptr %r, i32 0, i32 1
  %w = load i32, ptr %w.ptr
  %h = load i32, ptr %h.ptr
  %a = mul i32 %w, %h
  ret i32 %a
}

define i64 @factorial(i64 %n) {
entry:
  %base = icmp ule i64 %n, 1
  br i1 %base, label %one, label %recurse

one:
  ret i64 1

recurse:
  %n.minus = sub i64 %n, 1
  %rest = call i64 @factorial(i64 %n.minus)
  %product = mul i64 %n, %rest
  ret i64 %product
}

define i32 @main() {
entry:
  br label %loop

loop:
  %i = phi i32 [ 0, %entry ], [ %i.next, %loop ]
  %best = phi i32 [ 0, %entry ], [ %best.next, %loop ]
  %best.area = phi i32 [ 0, %entry ], [ %best.area.next, %loop ]
  %r = getelementptr inbounds [4 x %struct.rect], ptr @rects, i32 0, i32 %i
  %a = call i32 @area(ptr %r)
  %w.ptr = getelementptr inbounds %struct.rect, ptr %r, i32 0, i32 0
  %h.ptr = getelementptr inbounds %struct.rect, ptr %r, i32 0, i32 1
  %w = load i32, ptr %w.ptr
  %h = load i32, ptr %h.ptr
  call i32 (ptr, ...) @printf(ptr @rect.fmt, i32 %i, i32 %w, i32 %h, i32 %a)
  %bigger = icmp sgt i32 %a, %best.area
  %best.next = select i1 %bigger, i32 %i, i32 %best
  %best.area.next = select i1 %bigger, i32 %a, i32 %best.area
  %i.next = add i32 %i, 1
  %more = icmp slt i32 %i.next, 4
  br i1 %more, label %loop, label %factorials

factorials:
  call i32 (ptr, ...) @printf(ptr @largest.fmt, i32 %best.next, i32 %best.area.next)
  br label %fact.loop

fact.loop:
  %n = phi i64 [ 1, %factorials ], [ %n.next, %fact.loop ]
  %f = call i64 @factorial(i64 %n)
  call i32 (ptr, ...) @printf(ptr @fact.fmt, i64 %n, i64 %f)
  %n.next = add i64 %n, 5
  %again = icmp ule i64 %n.next, 20
  br i1 %again, label %fact.loop, label %exit

exit:
  ret i32 0
}
