var people = new[] { new Person("Ada", 36), new Person("Alan", 41) };
foreach (var p in people)
    Console.WriteLine($"{p.Name} is {p.Age}");

record Person(string Name, int Age);
