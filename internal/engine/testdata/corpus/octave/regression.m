1;  # a script file, not a function file: it defines functions and runs code

function [slope, intercept, r2] = linear_fit (x, y)
  A = [x(:), ones(numel (x), 1)];
  coeffs = A \ y(:);
  slope = coeffs(1);
  intercept = coeffs(2);
  residuals = y(:) - A * coeffs;
  r2 = 1 - sum (residuals .^ 2) / sum ((y(:) - mean (y)) .^ 2);
endfunction

x = 1:8;
y = [2.1 3.9 6.2 7.8 10.1 12.2 13.8 16.1];
[m, b, r2] = linear_fit (x, y);
printf ("fit: y = %.3f x + %.3f (R^2 = %.4f)\n", m, b, r2);

## Vectorised statistics and logical indexing.
printf ("mean %.3f, median %.3f, std %.3f\n", mean (y), median (y), std (y));
above = y(y > mean (y));
printf ("above the mean: %s\n", mat2str (above));

## Linear algebra.
M = magic (4);
printf ("magic(4) rows sum to %s\n", mat2str (sum (M, 2)'));
printf ("rank %d, trace %d, singular: %d\n", rank (M), trace (M), abs (det (M)) < 1e-9);
A = [4 -2; 1 1];
[V, D] = eig (A);
printf ("eigenvalues of %s: %s\n", mat2str (A), mat2str (sort (diag (D))'));
B = reshape (1:6, 2, 3)
C = B' * B;
printf ("B'*B is %dx%d, symmetric: %d\n", rows (C), columns (C), isequal (C, C'));

## Anonymous functions and cellfun.
square = @(v) v .^ 2;
names = {"alpha", "beta", "gamma"};
lengths = cellfun (@numel, names);
printf ("%s has %d letters\n", [names; num2cell(lengths)]{:});
printf ("squares: %s\n", num2str (square (1:5)));
