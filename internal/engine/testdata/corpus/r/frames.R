df <- data.frame(
  name = c("ann", "bob", "cy", "dee"),
  team = c("red", "blue", "red", "blue"),
  score = c(91, 78, 85, 88),
  stringsAsFactors = FALSE
)

means <- aggregate(score ~ team, data = df, FUN = mean)
print(means)

best <- df[which.max(df$score), ]
cat(sprintf("best: %s (%d)\n", best$name, best$score))

df$grade <- ifelse(df$score >= 85, "A", "B")
print(table(df$team, df$grade))
cat("sorted:", df$name[order(-df$score)], "\n")
