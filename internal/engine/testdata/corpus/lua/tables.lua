local fruits = { "banana", "apple", "cherry" }
table.sort(fruits)
for i, name in ipairs(fruits) do
  io.write(string.format("%d:%s ", i, name))
end
print()

local counts = {}
for word in ("a b a c b a"):gmatch("%a+") do
  counts[word] = (counts[word] or 0) + 1
end
local keys = {}
for k in pairs(counts) do keys[#keys + 1] = k end
table.sort(keys)
for _, k in ipairs(keys) do print(k, counts[k]) end

local function counter()
  local n = 0
  return function() n = n + 1; return n end
end
local c = counter()
c(); c()
print("counter", c())
