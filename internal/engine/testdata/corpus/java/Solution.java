import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

public class Solution {
    interface Animal {
        String sound();
    }

    static class Dog implements Animal {
        public String sound() { return "woof"; }
    }

    static class Cat implements Animal {
        public String sound() { return "meow"; }
    }

    private static int sumOfLine(String line) {
        int total = 0;
        for (String part : line.trim().split("\\s+")) {
            total += Integer.parseInt(part);
        }
        return total;
    }

    public static void main(String[] args) throws IOException {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        int n = Integer.parseInt(in.readLine().trim());
        List<Integer> sums = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            sums.add(sumOfLine(in.readLine()));
        }
        Collections.sort(sums);
        System.out.println(sums);

        List<Animal> pets = List.of(new Dog(), new Cat());
        StringBuilder sb = new StringBuilder();
        for (Animal a : pets) {
            sb.append(a.sound()).append(' ');
        }
        System.out.println(sb.toString().trim());
    }
}
