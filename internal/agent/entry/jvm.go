package entry

import (
	"bytes"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
	"unicode"
)

// javaType is a top-level class, interface, enum or record.
type javaType struct {
	name    string
	public  bool
	hasMain bool // declares static void main(...)
}

// java saves the code as the file its public top-level type names
// (javac requires it) and runs the top-level type that declares
// static void main: the public one if it does, else the first.
func java(file string, src []byte) (Point, error) {
	toks := cTokens(string(src), false)
	var (
		pkg       string
		types     []javaType
		cur       = -1 // index in types of the type whose body is open
		depth     int
		public    bool // "public" since the last declaration boundary at depth 0
		static    bool // "static" since the last member boundary at depth 1
		afterType bool // a type's header is being read; its "{" opens its body
	)
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		if t.str {
			continue
		}
		switch t.text {
		case "{":
			depth++
			if depth == 1 && afterType {
				cur = len(types) - 1
				afterType = false
			}
			static = false
			continue
		case "}":
			depth--
			if depth == 0 {
				cur, public = -1, false
			}
			static = false
			continue
		case ";":
			if depth == 0 {
				public = false
			}
			static = false
			continue
		}
		switch depth {
		case 0:
			switch t.text {
			case "package":
				pkg, i = qualifiedName(toks, i+1)
				i--
			case "import":
				for i < len(toks) && toks[i].text != ";" {
					i++
				}
				i--
			case "public":
				public = true
			case "class", "interface", "enum", "record":
				if i > 0 && toks[i-1].text == "." || i+1 >= len(toks) || !isIdent(toks[i+1].text) {
					continue
				}
				if t.text == "record" && (i+2 >= len(toks) || toks[i+2].text != "(" && toks[i+2].text != "<") {
					continue
				}
				types = append(types, javaType{name: toks[i+1].text, public: public})
				afterType = true
				i++
			}
		case 1:
			switch t.text {
			case "static":
				static = true
			case "main":
				if cur >= 0 && static && i > 0 && toks[i-1].text == "void" && i+1 < len(toks) && toks[i+1].text == "(" {
					types[cur].hasMain = true
				}
			}
		}
	}

	var publicTypes []string
	for _, t := range types {
		if t.public {
			publicTypes = append(publicTypes, t.name)
		}
	}
	if len(publicTypes) > 1 {
		return Point{}, fmt.Errorf("the code declares %d public top-level classes (%s), but Java allows one per file, and the file must be named after it; "+
			"keep `public` on the class with main and remove it from the others (or nest them inside it)", len(publicTypes), strings.Join(publicTypes, ", "))
	}
	main := -1
	for i, t := range types {
		if t.hasMain && (main < 0 || t.public) {
			main = i
		}
	}
	if main < 0 {
		what := "no class"
		if len(types) == 0 {
			what = "the code declares no class at all, so no class"
		}
		return Point{}, fmt.Errorf("%s declares `public static void main(String[] args)`; "+
			"the runner compiles the code and runs the top-level class that has that method, so add one (for example `public class Main { public static void main(String[] args) { ... } }`)", what)
	}
	p := Point{File: file, Main: types[main].name, Source: src}
	if len(publicTypes) == 1 {
		p.File = publicTypes[0] + ".java"
	}
	if pkg != "" {
		p.Main = pkg + "." + p.Main
	}
	return p, nil
}

// kotlin runs the class that holds the program's main: for a top-level
// fun main, the file's class (MainKt for main.kt, or @file:JvmName's name),
// else an object (or a class's companion object) with a @JvmStatic main.
// The file keeps its name, whatever the package.
func kotlin(file string, src []byte) (Point, error) {
	toks := cTokens(string(src), true)
	var (
		pkg, jvmName, holder string
		topMain              bool
		depth                int
		objects              = map[int]string{} // depth of an object's body -> the class that runs it
		lastClass            string             // the last class or object declared at depth 0
		pending              string             // an object or class header being read; its "{" opens it
		pendingDepth         = -1
	)
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		if t.str {
			continue
		}
		switch t.text {
		case "{":
			depth++
			if pending != "" && pendingDepth == depth-1 {
				objects[depth] = pending
			}
			pending, pendingDepth = "", -1
			continue
		case "}":
			delete(objects, depth)
			depth--
			continue
		}
		switch {
		case depth == 0 && t.text == "package":
			pkg, i = qualifiedName(toks, i+1)
			i--
		case depth == 0 && t.text == "@" && i+4 < len(toks) && toks[i+1].text == "file" && toks[i+2].text == ":" && toks[i+3].text == "JvmName" && toks[i+4].text == "(":
			if i+5 < len(toks) && toks[i+5].str {
				jvmName = toks[i+5].text
			}
		case t.text == "fun" && i+2 < len(toks) && toks[i+1].text == "main" && toks[i+2].text == "(":
			if depth == 0 {
				topMain = true
			} else if obj, ok := objects[depth]; ok && holder == "" && jvmStaticBefore(toks, i) {
				holder = obj
			}
		case t.text == "object" && (i == 0 || toks[i-1].text != "."):
			name := ""
			if i+1 < len(toks) && isIdent(toks[i+1].text) && !isKeyword(toks[i+1].text) {
				name = toks[i+1].text
			}
			switch {
			case i > 0 && toks[i-1].text == "companion" && depth == 1 && lastClass != "":
				pending, pendingDepth = lastClass, depth
			case depth == 0 && name != "":
				pending, pendingDepth = name, depth
			}
		case depth == 0 && t.text == "class" && i+1 < len(toks) && isIdent(toks[i+1].text):
			lastClass = toks[i+1].text
		}
	}
	p := Point{File: file, Source: src}
	switch {
	case topMain && jvmName != "":
		p.Main = jvmName
	case topMain:
		p.Main = kotlinFileClass(file)
	case holder != "":
		p.Main = holder
	default:
		return Point{}, errors.New("the code has no `fun main()`; the runner runs a top-level `fun main()` or `fun main(args: Array<String>)` " +
			"(or a `@JvmStatic fun main(args: Array<String>)` in an object), so add one")
	}
	if pkg != "" {
		p.Main = pkg + "." + p.Main
	}
	p.Source = kotlinStandIns(src, toks)
	return p, nil
}

// kotlinNewer are functions of Kotlin 1.5 and 1.6 that programs written
// today use and the image's compiler (Debian's 1.3.31) lacks, each with
// what stands in for it, written in Kotlin 1.3; an extension is used after
// a ".".
var kotlinNewer = []struct {
	name      string
	extension bool
	decl      string
}{
	{"readln", false, `fun readln(): String = readLine() ?: throw RuntimeException("EOF has already been reached")`},
	{"readlnOrNull", false, `fun readlnOrNull(): String? = readLine()`},
	{"uppercase", true, `fun String.uppercase(): String = toUpperCase(java.util.Locale.ROOT); fun Char.uppercase(): String = toString().toUpperCase(java.util.Locale.ROOT)`},
	{"lowercase", true, `fun String.lowercase(): String = toLowerCase(java.util.Locale.ROOT); fun Char.lowercase(): String = toString().toLowerCase(java.util.Locale.ROOT)`},
	{"uppercaseChar", true, `fun Char.uppercaseChar(): Char = toUpperCase()`},
	{"lowercaseChar", true, `fun Char.lowercaseChar(): Char = toLowerCase()`},
	{"digitToInt", true, `fun Char.digitToInt(): Int = Character.digit(this, 10).also { require(it >= 0) { "Char $this is not a decimal digit" } }`},
	{"code", true, `val Char.code: Int get() = toInt()`},
}

// kotlinStandIns appends to src, after its last line so that the lines the
// compiler names stay the user's, a stand-in for each function of
// kotlinNewer the code uses and does not declare itself: readln() and
// "x".uppercase() run as written on the 1.3 compiler.
func kotlinStandIns(src []byte, toks []token) []byte {
	// A template's expressions ("${name.uppercase()}") are code too; the
	// text around them counted as code at worst adds a stand-in unused.
	for _, t := range slices.Clone(toks) {
		if t.str && strings.Contains(t.text, "${") {
			toks = append(toks, cTokens(t.text, true)...)
		}
	}
	var add []string
	for _, f := range kotlinNewer {
		used, declared := false, false
		for i, t := range toks {
			if t.str || t.text != f.name {
				continue
			}
			prev := ""
			if i > 0 {
				prev = toks[i-1].text
			}
			switch {
			case prev == "fun" || prev == "val" || prev == "var" || i > 1 && prev == "." && (toks[i-2].text == "String" || toks[i-2].text == "Char") && i > 2 && (toks[i-3].text == "fun" || toks[i-3].text == "val"):
				declared = true
			case f.extension && prev == "." || !f.extension && prev != "." && i+1 < len(toks) && toks[i+1].text == "(":
				used = true
			}
		}
		if used && !declared {
			add = append(add, f.decl)
		}
	}
	if len(add) == 0 {
		return src
	}
	out := bytes.Clone(src)
	if len(out) > 0 && out[len(out)-1] != '\n' {
		out = append(out, '\n')
	}
	out = append(out, "// stand-ins for Kotlin 1.5/1.6 functions that this runner's Kotlin 1.3 lacks\n"...)
	return append(out, strings.Join(add, "\n")+"\n"...)
}

// kotlinFileClass is the class Kotlin makes of a file's top-level
// declarations: main.kt gives MainKt.
func kotlinFileClass(file string) string {
	base := strings.TrimSuffix(path.Base(file), path.Ext(file))
	var b strings.Builder
	for i, r := range base {
		switch {
		case i == 0:
			b.WriteRune(unicode.ToUpper(r))
		case r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		default:
			b.WriteRune('_')
		}
	}
	return b.String() + "Kt"
}

// jvmStaticBefore reports whether the declaration that ends at toks[i]
// ("fun") carries @JvmStatic among its annotations and modifiers.
func jvmStaticBefore(toks []token, i int) bool {
	for j := i - 1; j >= 0 && j >= i-8; j-- {
		switch toks[j].text {
		case "JvmStatic":
			return true
		case "{", "}", ";", ")":
			return false
		}
	}
	return false
}

func isKeyword(s string) bool {
	switch s {
	case "object", "class", "fun", "val", "var", "interface", "companion":
		return true
	}
	return false
}

// scala runs the first top-level object that declares def main or extends
// App (Scala 2's two ways to write a program); the file keeps its name,
// since scalac does not tie file names to objects.
func scala(file string, src []byte) (Point, error) {
	toks := cTokens(string(src), true)
	var (
		pkg      string
		depth    int
		pending  string // a top-level object whose header is being read
		cur      string // the top-level object whose body is open
		main     string
		scala3At bool // an @main annotation (Scala 3's entry point)
	)
	for i := 0; i < len(toks) && main == ""; i++ {
		t := toks[i]
		if t.str {
			continue
		}
		switch t.text {
		case "{":
			depth++
			if depth == 1 && pending != "" {
				cur, pending = pending, ""
			}
			continue
		case "}":
			depth--
			if depth == 0 {
				cur = ""
			}
			continue
		}
		switch {
		case depth == 0 && t.text == "package" && i+1 < len(toks) && toks[i+1].text != "object":
			var name string
			name, i = qualifiedName(toks, i+1)
			i--
			if pkg == "" {
				pkg = name
			} else {
				pkg += "." + name
			}
		case depth == 0 && t.text == "object" && i+1 < len(toks) && isIdent(toks[i+1].text) && (i == 0 || toks[i-1].text != "case" && toks[i-1].text != "package"):
			pending = toks[i+1].text
			i++
		case depth == 0 && pending != "" && (t.text == "extends" || t.text == "with") && i+1 < len(toks) && toks[i+1].text == "App":
			main = pending
		case depth == 0 && t.text == "class" || depth == 0 && t.text == "trait":
			pending = ""
		case depth == 1 && cur != "" && t.text == "def" && i+2 < len(toks) && toks[i+1].text == "main" && (toks[i+2].text == "(" || toks[i+2].text == ":"):
			main = cur
		case t.text == "@" && i+1 < len(toks) && toks[i+1].text == "main":
			scala3At = true
		}
	}
	if main == "" {
		msg := "the code has no top-level object with `def main(args: Array[String]): Unit` and none that extends App; " +
			"the runner compiles it with Scala 2.11 and runs that object, so add one (for example `object Main { def main(args: Array[String]): Unit = { ... } }`)"
		if scala3At {
			msg = "`@main` is Scala 3, and this runner has Scala 2.11: write the program as `object Main { def main(args: Array[String]): Unit = { ... } }` (or `object Main extends App { ... }`)"
		}
		return Point{}, errors.New(msg)
	}
	p := Point{File: file, Main: main, Source: src}
	if pkg != "" {
		p.Main = pkg + "." + main
	}
	return p, nil
}
