CREATE TABLE sales (region TEXT, month INTEGER, amount REAL);
INSERT INTO sales VALUES
  ('east', 1, 100), ('east', 2, 150), ('east', 3, 120),
  ('west', 1, 80),  ('west', 2, 60),  ('west', 3, 200);

.mode list
SELECT region, month, amount,
       SUM(amount) OVER (PARTITION BY region ORDER BY month) AS running,
       RANK() OVER (PARTITION BY month ORDER BY amount DESC) AS rank_in_month
FROM sales
ORDER BY region, month;
