## Struct arrays and cell arrays from lines of "name,department,salary" on stdin.
records = struct ("name", {}, "dept", {}, "salary", {});
while true
  line = fgetl (stdin);
  if (! ischar (line))
    break;
  endif
  fields = strsplit (strtrim (line), ",");
  records(end+1) = struct ("name", fields{1}, "dept", fields{2},
                           "salary", str2double (fields{3}));
endwhile

printf ("%d employees\n", numel (records));
depts = unique ({records.dept});
for i = 1:numel (depts)
  in_dept = strcmp ({records.dept}, depts{i});
  salaries = [records(in_dept).salary];
  printf ("%-12s n=%d total=%8.2f mean=%8.2f\n", depts{i}, nnz (in_dept),
          sum (salaries), mean (salaries));
endfor

[~, order] = sort ([records.salary], "descend");
top = records(order(1));
printf ("top earner: %s (%s), %.2f\n", top.name, top.dept, top.salary);

s.count = numel (records);
s.names = sort ({records.name});
s.payroll = sum ([records.salary]);
disp (s.names);
printf ("fields: %s\n", strjoin (fieldnames (s)', ", "));
try
  records(99).salary;
catch err
  printf ("caught: %s\n", err.message);
end_try_catch
