package entry

import (
	"strings"
	"unicode"
)

// csharp runs C# 9 top-level statements on a compiler that predates them
// (Mono's mcs speaks C# 7): a program whose first statements stand outside
// any class, and that declares no Main of its own, gets them wrapped in
// the Main of a class of their own, as the C# 9 compiler does. The wrapper
// opens on the line of the first statement and closes on the line of the
// first declaration after them (or after the last line), so the lines the
// compiler names stay the user's. What a C# 7 compiler lacks besides
// (records, local functions, switch expressions) is left to its message.
func csharp(file string, src []byte) (Point, error) {
	p := Point{File: file, Source: src}
	items := csharpTopLevel(string(src))
	first, end := -1, len(src)
	for _, it := range items {
		switch {
		case first < 0 && it.kind == csStatement:
			first = it.start
		case first >= 0 && it.kind == csDeclaration:
			end = it.start
		}
		if first >= 0 && end < len(src) {
			break
		}
	}
	if first < 0 || csharpDeclaresMain(string(src)) {
		return p, nil
	}
	body := string(src[first:end])
	words := csharpWords(body)
	// mcs has no async Main: statements that await run in an async
	// method that Main waits for.
	sig := "static void Main(string[] args)"
	tail := ""
	returns := csharpReturnsValue(body)
	switch {
	case words["await"] && returns:
		sig = "static int Main(string[] args) { return MainAsync(args).GetAwaiter().GetResult(); } static async System.Threading.Tasks.Task<int> MainAsync(string[] args)"
		tail = " return 0;"
	case words["await"]:
		sig = "static void Main(string[] args) { MainAsync(args).GetAwaiter().GetResult(); } static async System.Threading.Tasks.Task MainAsync(string[] args)"
	case returns:
		sig = "static int Main(string[] args)"
		tail = " return 0;"
	}
	class := "Program"
	if words["Program"] {
		class = "TopLevelProgram"
	}
	var b strings.Builder
	// .NET 6's console template leaves these to implicit global usings;
	// on line 1, before the user's, so that lines stay theirs.
	for _, ns := range csharpImplicitUsings {
		if !strings.Contains(string(src), "using "+ns+";") {
			b.WriteString("using " + ns + "; ")
		}
	}
	b.WriteString(string(src[:first]))
	b.WriteString("static class " + class + " { " + sig + " { ")
	b.WriteString(body)
	if end == len(src) {
		if !strings.HasSuffix(body, "\n") {
			b.WriteString("\n")
		}
		b.WriteString("#pragma warning disable 0162\n" + tail + " } }\n")
	} else {
		b.WriteString(tail + " } } ")
		b.WriteString(string(src[end:]))
	}
	p.Source = []byte(b.String())
	return p, nil
}

// csharpImplicitUsings are the namespaces a .NET 6 console project imports
// without a using directive (ImplicitUsings), but System.Net.Http, which
// Mono compiles only with a reference to its assembly.
var csharpImplicitUsings = []string{"System", "System.IO", "System.Collections.Generic", "System.Linq", "System.Threading", "System.Threading.Tasks"}

// The kinds of a top-level item of C# source.
const (
	csDirective   = iota // using, extern alias
	csDeclaration        // a type, a namespace, an attribute
	csStatement          // anything else: a top-level statement
)

type csItem struct {
	start int // byte offset of its first character
	kind  int
}

// csharpDeclarationWords start a declaration at the top level of a file.
var csharpDeclarationWords = map[string]bool{
	"class": true, "struct": true, "interface": true, "enum": true, "record": true, "delegate": true,
	"namespace": true, "public": true, "private": true, "protected": true, "internal": true,
	"static": true, "sealed": true, "abstract": true, "partial": true, "unsafe": true, "readonly": true,
	"file": true, "[": true,
}

// csharpTopLevel splits source into its top-level items: each starts at a
// code character at brace depth 0 and ends at a ";" at that depth or at
// the "}" that brings the depth back to 0. Comments, string and character
// literals and preprocessor lines are skipped.
func csharpTopLevel(src string) []csItem {
	var items []csItem
	depth, start := 0, -1
	var firstWords []string
	lineStart := true
	for i := 0; i < len(src); {
		c := src[i]
		switch {
		case c == '\n':
			lineStart = true
			i++
			continue
		case c == ' ' || c == '\t' || c == '\r':
			i++
			continue
		case lineStart && c == '#':
			for i < len(src) && src[i] != '\n' {
				i++
			}
			continue
		case strings.HasPrefix(src[i:], "//"):
			for i < len(src) && src[i] != '\n' {
				i++
			}
			continue
		case strings.HasPrefix(src[i:], "/*"):
			if j := strings.Index(src[i+2:], "*/"); j >= 0 {
				i += j + 4
			} else {
				i = len(src)
			}
			continue
		}
		lineStart = false
		if depth == 0 && start < 0 {
			start, firstWords = i, nil
		}
		next := csharpSkipLiteral(src, i)
		if next > i {
			i = next
			if depth == 0 && len(firstWords) < 2 {
				firstWords = append(firstWords, "\"")
			}
			continue
		}
		word := ""
		if isIdentRune(rune(c)) {
			j := i
			for j < len(src) && isIdentRune(rune(src[j])) {
				j++
			}
			word, i = src[i:j], j
		} else {
			word = string(c)
			i++
		}
		if depth == 0 && len(firstWords) < 2 {
			firstWords = append(firstWords, word)
		}
		ended := false
		switch word {
		case "{":
			depth++
		case "}":
			depth--
			ended = depth == 0
		case ";":
			ended = depth == 0
		}
		if ended && start >= 0 {
			items = append(items, csItem{start: start, kind: csharpKind(firstWords)})
			start = -1
		}
	}
	if start >= 0 {
		items = append(items, csItem{start: start, kind: csharpKind(firstWords)})
	}
	return items
}

func csharpKind(words []string) int {
	if len(words) == 0 {
		return csStatement
	}
	second := ""
	if len(words) > 1 {
		second = words[1]
	}
	switch {
	case words[0] == "using" && second != "(" && second != "var" || words[0] == "global" && second == "using" || words[0] == "extern" && second == "alias":
		return csDirective
	case csharpDeclarationWords[words[0]]:
		return csDeclaration
	}
	return csStatement
}

// csharpSkipLiteral returns the offset after the string or character
// literal that starts at i (regular, verbatim @"", interpolated $"", and
// their mixes), or i when none starts there.
func csharpSkipLiteral(src string, i int) int {
	j := i
	verbatim := false
	for j < len(src) && (src[j] == '@' || src[j] == '$') && j-i < 2 {
		verbatim = verbatim || src[j] == '@'
		j++
	}
	if j >= len(src) || (src[j] != '"' && src[j] != '\'') || (src[j] == '\'' && j != i) {
		return i
	}
	quote := src[j]
	j++
	for j < len(src) {
		switch {
		case verbatim && src[j] == '"' && j+1 < len(src) && src[j+1] == '"':
			j += 2
		case !verbatim && src[j] == '\\':
			j += 2
		case src[j] == quote:
			return j + 1
		case src[j] == '\n' && !verbatim:
			return j // an unclosed literal ends with its line; the compiler says so
		default:
			j++
		}
	}
	return len(src)
}

func isIdentRune(r rune) bool {
	return r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) || r >= 0x80
}

// csharpWords returns the identifiers of code, literals and comments
// included (enough for the few words the wrapper looks for).
func csharpWords(code string) map[string]bool {
	words := map[string]bool{}
	for _, w := range strings.FieldsFunc(code, func(r rune) bool { return !isIdentRune(r) }) {
		words[w] = true
	}
	return words
}

// csharpDeclaresMain reports whether the code declares a method Main.
func csharpDeclaresMain(src string) bool {
	for i := 0; ; {
		j := strings.Index(src[i:], "Main")
		if j < 0 {
			return false
		}
		j += i
		before := strings.TrimRight(src[:j], " \t")
		after := strings.TrimLeft(src[j+4:], " \t\r\n")
		if (j == 0 || !isIdentRune(rune(src[j-1]))) && strings.HasPrefix(after, "(") &&
			(strings.HasSuffix(before, "void") || strings.HasSuffix(before, "int") || strings.HasSuffix(before, "Task") || strings.HasSuffix(before, ">")) {
			return true
		}
		i = j + 4
	}
}

// csharpReturnsValue reports whether top-level statements return a value
// (an exit code), as in "return 3;".
func csharpReturnsValue(body string) bool {
	for i := 0; ; {
		j := strings.Index(body[i:], "return")
		if j < 0 {
			return false
		}
		j += i
		after := strings.TrimLeft(body[j+6:], " \t\r\n")
		if (j == 0 || !isIdentRune(rune(body[j-1]))) && (j+6 == len(body) || !isIdentRune(rune(body[j+6]))) && !strings.HasPrefix(after, ";") {
			return true
		}
		i = j + 6
	}
}
