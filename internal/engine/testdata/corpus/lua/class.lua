local Stack = {}
Stack.__index = Stack

function Stack.new()
  return setmetatable({ items = {}, size = 0 }, Stack)
end

function Stack:push(v)
  self.size = self.size + 1
  self.items[self.size] = v
  return self
end

function Stack:pop()
  local v = self.items[self.size]
  self.items[self.size] = nil
  self.size = self.size - 1
  return v
end

local s = Stack.new():push(1):push(2):push(3)
print(s:pop(), s:pop(), s.size)

local ok, err = pcall(function() error({ code = 42 }) end)
print(ok, type(err), err.code)
