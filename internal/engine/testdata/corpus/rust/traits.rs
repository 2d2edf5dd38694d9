use std::collections::HashMap;

trait Describe {
    fn describe(&self) -> String;
}

#[derive(Debug, Clone, PartialEq)]
struct Book {
    title: String,
    year: u16,
}

impl Describe for Book {
    fn describe(&self) -> String {
        format!("{} ({})", self.title, self.year)
    }
}

fn oldest<T: Describe>(items: &[T]) -> Option<&T> {
    items.first()
}

fn main() {
    let mut books = vec![
        Book { title: "Dune".into(), year: 1965 },
        Book { title: "Neuromancer".into(), year: 1984 },
        Book { title: "Foundation".into(), year: 1951 },
    ];
    books.sort_by_key(|b| b.year);
    if let Some(b) = oldest(&books) {
        println!("oldest: {}", b.describe());
    }

    let text = "one fish two fish red fish blue fish";
    let mut freq: HashMap<&str, usize> = HashMap::new();
    for w in text.split(' ') {
        *freq.entry(w).or_default() += 1;
    }
    let mut pairs: Vec<_> = freq.into_iter().collect();
    pairs.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    let line: Vec<String> = pairs.iter().map(|(w, n)| format!("{w}={n}")).collect();
    println!("{}", line.join(" "));
}
