import java.util.*;
import java.util.stream.*;

public class Streams {
    record Employee(String name, String dept, double salary) {}

    public static void main(String[] args) {
        var staff = List.of(
                new Employee("Ann", "eng", 120_000),
                new Employee("Bo", "ops", 80_000),
                new Employee("Cy", "eng", 100_000));

        Map<String, Double> avg = staff.stream()
                .collect(Collectors.groupingBy(Employee::dept, TreeMap::new,
                        Collectors.averagingDouble(Employee::salary)));
        avg.forEach((dept, s) -> System.out.printf("%s %.0f%n", dept, s));

        String names = staff.stream()
                .filter(e -> e.salary() > 90_000)
                .map(Employee::name)
                .sorted(Comparator.reverseOrder())
                .collect(Collectors.joining(", ", "[", "]"));
        System.out.println(names);

        for (var e : staff) {
            String band = switch (e.dept()) {
                case "eng" -> "technical";
                case "ops" -> "operations";
                default -> "other";
            };
            System.out.println(e.name() + ": " + band);
        }
    }
}
