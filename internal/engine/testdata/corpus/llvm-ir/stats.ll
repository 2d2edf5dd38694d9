; Reads integers from standard input with scanf until the end of input and
; prints their count, sum, minimum, maximum and mean: a loop in SSA form,
; with phi nodes carrying the running values.

@in.fmt = private unnamed_addr constant [4 x i8] c"%ld\00"
@out.fmt = private unnamed_addr constant [49 x i8] c"count %ld, sum %ld, min %ld, max %ld, mean %.2f\0A\00"
@empty = private unnamed_addr constant [10 x i8] c"no input\0A\00"

declare i32 @__isoc99_scanf(ptr, ...)
declare i32 @printf(ptr, ...)

define i32 @main() {
entry:
  %value = alloca i64
  br label %read

read:
  %count = phi i64 [ 0, %entry ], [ %count.next, %accumulate ]
  %sum = phi i64 [ 0, %entry ], [ %sum.next, %accumulate ]
  %min = phi i64 [ 9223372036854775807, %entry ], [ %min.next, %accumulate ]
  %max = phi i64 [ -9223372036854775808, %entry ], [ %max.next, %accumulate ]
  %got = call i32 (ptr, ...) @__isoc99_scanf(ptr @in.fmt, ptr %value)
  %ok = icmp eq i32 %got, 1
  br i1 %ok, label %accumulate, label %done

accumulate:
  %v = load i64, ptr %value
  %count.next = add i64 %count, 1
  %sum.next = add i64 %sum, %v
  %lower = icmp slt i64 %v, %min
  %min.next = select i1 %lower, i64 %v, i64 %min
  %higher = icmp sgt i64 %v, %max
  %max.next = select i1 %higher, i64 %v, i64 %max
  br label %read

done:
  %none = icmp eq i64 %count, 0
  br i1 %none, label %report.empty, label %report

report:
  %sum.f = sitofp i64 %sum to double
  %count.f = sitofp i64 %count to double
  %mean = fdiv double %sum.f, %count.f
  call i32 (ptr, ...) @printf(ptr @out.fmt, i64 %count, i64 %sum, i64 %min, i64 %max, double %mean)
  ret i32 0

report.empty:
  call i32 (ptr, ...) @printf(ptr @empty)
  ret i32 1
}
