// Package entry finds where a program starts, by its language's own
// convention, so that code runs as people write it: Java's public class
// Solution in Solution.java, Kotlin's fun main in a package, an Erlang
// module with main/0, a Clojure namespace with -main; and the source form
// a compiler must be told, COBOL's free format or 32-bit x86 assembly. The
// agent applies it to the code before the first stage; the language
// registry names the convention and writes {file}, {main} and {form} in its
// commands where the result goes.
//
// It reads source text with small tokenizers that know each language's
// comments and string literals, not full parsers: enough to find top-level
// declarations. Whatever it cannot decide is left to the compiler, whose
// message is then the one the user sees.
package entry

import (
	"fmt"
	"sort"
	"strings"
)

// Point is where a program starts.
type Point struct {
	// File is the name the code must be saved under ("Solution.java").
	File string
	// Main is what the language's commands start: a class, a module.
	Main string
	// Source is the code to save; the same as given unless the convention
	// completes it (an escript header made a module, a call of -main).
	Source []byte
	// Form is the source form the compiler must be told, for a language
	// written in more than one that only the code tells apart: COBOL's
	// "free" or "fixed" format, x86 assembly's "32" or "64" bits.
	Form string
}

// A convention reads the code saved as file and says where it starts, or
// why it cannot start (a message for the user that says what the runner
// expected).
type convention func(file string, src []byte) (Point, error)

var conventions = map[string]convention{
	"java":    java,
	"kotlin":  kotlin,
	"erlang":  erlang,
	"clojure": clojure,
	"haskell": haskell,
	"go":      golang,
	"scala":   scala,
	"cobol":   cobol,
	"asm":     asm,
	"csharp":  csharp,
}

// Known reports whether name is a convention Find understands.
func Known(name string) bool { _, ok := conventions[name]; return ok }

// Names lists the conventions, sorted.
func Names() []string {
	var n []string
	for k := range conventions {
		n = append(n, k)
	}
	sort.Strings(n)
	return n
}

// Find applies the named convention to the code saved as file.
func Find(name, file string, src []byte) (Point, error) {
	c, ok := conventions[name]
	if !ok {
		return Point{}, fmt.Errorf("unknown entry-point convention %q (known: %s)", name, strings.Join(Names(), ", "))
	}
	return c(file, src)
}

// Placeholders are what Fill replaces in a language's commands.
var Placeholders = []string{"{file}", "{main}", "{form}"}

// Fill replaces {file}, {main} and {form} in argv with p's values.
func Fill(argv []string, p Point) []string {
	out := make([]string, len(argv))
	r := strings.NewReplacer("{file}", p.File, "{main}", p.Main, "{form}", p.Form)
	for i, a := range argv {
		out[i] = r.Replace(a)
	}
	return out
}
