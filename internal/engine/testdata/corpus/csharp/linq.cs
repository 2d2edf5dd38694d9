using System;
using System.Collections.Generic;
using System.Linq;

namespace Shop
{
    public class Product
    {
        public string Name { get; set; }
        public string Category { get; set; }
        public decimal Price { get; set; }
    }

    public static class Program
    {
        public static void Main(string[] args)
        {
            var products = new List<Product>
            {
                new Product { Name = "Apple", Category = "Fruit", Price = 0.5m },
                new Product { Name = "Leek", Category = "Veg", Price = 1.25m },
                new Product { Name = "Pear", Category = "Fruit", Price = 0.75m },
            };

            var byCategory = products
                .GroupBy(p => p.Category)
                .OrderBy(g => g.Key)
                .Select(g => new { Category = g.Key, Total = g.Sum(p => p.Price), Count = g.Count() });

            foreach (var g in byCategory)
            {
                Console.WriteLine($"{g.Category}: {g.Count} items, {g.Total:0.00}");
            }

            string cheapest = products.OrderBy(p => p.Price).First().Name;
            Console.WriteLine($"cheapest: {cheapest}");
        }
    }
}
