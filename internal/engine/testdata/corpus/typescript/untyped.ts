// Written as plain JavaScript: tsc's strict mode reports implicit anys,
// and the program still runs (type_errors counts them).
function greet(name) {
  return "hello, " + name;
}
console.log(greet("ts"));
