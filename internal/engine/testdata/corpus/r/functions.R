square <- function(x) x^2
compose <- function(f, g) function(x) f(g(x))
add_one <- function(x) x + 1

v <- 1:5
print(sapply(v, compose(square, add_one)))
print(Map(function(a, b) a * b, 1:3, 4:6))

m <- matrix(1:6, nrow = 2)
print(apply(m, 1, sum))
print(summary(c(2, 4, 4, 5, 7, 9)))

result <- tryCatch(
  stop("custom failure"),
  error = function(e) paste("caught:", conditionMessage(e))
)
print(result)
l <- list(a = 1, b = "two", c = TRUE)
str(l)
