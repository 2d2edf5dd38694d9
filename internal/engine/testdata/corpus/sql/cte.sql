CREATE TABLE employees (id INTEGER PRIMARY KEY, name TEXT NOT NULL, manager_id INTEGER REFERENCES employees(id));
INSERT INTO employees (id, name, manager_id) VALUES
  (1, 'Ada', NULL), (2, 'Bob', 1), (3, 'Cy', 1), (4, 'Dee', 2);

WITH RECURSIVE chain(id, name, depth) AS (
  SELECT id, name, 0 FROM employees WHERE manager_id IS NULL
  UNION ALL
  SELECT e.id, e.name, c.depth + 1
  FROM employees e JOIN chain c ON e.manager_id = c.id
)
SELECT printf('%*s%s', depth * 2, '', name) FROM chain ORDER BY depth, name;

SELECT m.name, COUNT(e.id) AS reports
FROM employees m LEFT JOIN employees e ON e.manager_id = m.id
GROUP BY m.id HAVING reports > 0 ORDER BY reports DESC, m.name;
