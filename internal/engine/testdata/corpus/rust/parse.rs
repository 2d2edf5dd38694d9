use std::fmt;
use std::num::ParseIntError;

#[derive(Debug)]
enum Command {
    Add(i64),
    Mul(i64),
    Reset,
}

#[derive(Debug)]
enum ParseError {
    Unknown(String),
    BadNumber(ParseIntError),
}

impl From<ParseIntError> for ParseError {
    fn from(e: ParseIntError) -> Self {
        ParseError::BadNumber(e)
    }
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ParseError::Unknown(s) => write!(f, "unknown command `{s}`"),
            ParseError::BadNumber(e) => write!(f, "bad number: {e}"),
        }
    }
}

fn parse(line: &str) -> Result<Command, ParseError> {
    let mut parts = line.split_whitespace();
    match (parts.next(), parts.next()) {
        (Some("add"), Some(n)) => Ok(Command::Add(n.parse()?)),
        (Some("mul"), Some(n)) => Ok(Command::Mul(n.parse()?)),
        (Some("reset"), None) => Ok(Command::Reset),
        _ => Err(ParseError::Unknown(line.to_string())),
    }
}

fn main() {
    let mut acc = 0;
    for line in ["add 5", "mul 3", "add x", "jump", "reset", "add 2"] {
        match parse(line) {
            Ok(Command::Add(n)) => acc += n,
            Ok(Command::Mul(n)) => acc *= n,
            Ok(Command::Reset) => acc = 0,
            Err(e) => eprintln!("skipping: {e}"),
        }
        println!("{line:>6} -> {acc}");
    }
}
