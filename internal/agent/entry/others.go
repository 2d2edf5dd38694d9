package entry

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"
)

// syntax says how a language writes comments, strings and characters, for
// blank: enough to blank them out.
type syntax struct {
	line       string // line comment ("--", ";", "%", "//")
	blockOpen  string // block comment, nesting ("{-", "/*"); "" for none
	blockClose string
	quotes     string // string (and quoted atom) delimiters, escaped by '\'
	charPrefix byte   // a character literal: this byte and the next one ('$' in Erlang, '\\' in Clojure)
}

// blank returns src with comments and the contents of strings replaced by
// spaces, newlines kept, so that patterns can look for declarations
// without being fooled by text that only looks like one.
func blank(src []byte, s syntax) []byte {
	out := bytes.Clone(src)
	n := len(out)
	wipe := func(from, to int) {
		for k := from; k < to && k < n; k++ {
			if out[k] != '\n' {
				out[k] = ' '
			}
		}
	}
	for i := 0; i < n; {
		switch {
		case s.line != "" && bytes.HasPrefix(src[i:], []byte(s.line)):
			j := i
			for j < n && src[j] != '\n' {
				j++
			}
			wipe(i, j)
			i = j
		case s.blockOpen != "" && bytes.HasPrefix(src[i:], []byte(s.blockOpen)):
			depth, j := 0, i
			for j < n {
				if bytes.HasPrefix(src[j:], []byte(s.blockOpen)) {
					depth++
					j += len(s.blockOpen)
					continue
				}
				if bytes.HasPrefix(src[j:], []byte(s.blockClose)) {
					depth--
					j += len(s.blockClose)
					if depth == 0 {
						break
					}
					continue
				}
				j++
			}
			wipe(i, j)
			i = j
		case s.charPrefix != 0 && src[i] == s.charPrefix && i+1 < n:
			wipe(i+1, i+2)
			i += 2
		case strings.IndexByte(s.quotes, src[i]) >= 0:
			q, j := src[i], i+1
			for j < n && src[j] != q {
				if src[j] == '\\' {
					j++
				}
				j++
			}
			wipe(i+1, j)
			i = j + 1
		default:
			i++
		}
	}
	return out
}

var (
	erlangSyntax  = syntax{line: "%", quotes: `"'`, charPrefix: '$'}
	erlangModule  = regexp.MustCompile(`(?m)^\s*-\s*module\s*\(`)
	clojureSyntax = syntax{line: ";", quotes: `"`, charPrefix: '\\'}
	clojureNS     = regexp.MustCompile(`\(\s*ns\s+(?:\^\S+\s+)*([^\s()\[\]{}";^]+)`)
	clojureDefn   = regexp.MustCompile(`\(\s*defn-?\s+(?:\^\S+\s+)*-main[\s\[(]`)
	clojureMain   = regexp.MustCompile("(?:^|[\\s()\\[\\]{},'#@^~`])(?:[^\\s()\\[\\]{}]*/)?-main(?:[\\s()\\[\\]{},]|$)")
	haskellSyntax = syntax{line: "--", blockOpen: "{-", blockClose: "-}", quotes: `"`}
	haskellModule = regexp.MustCompile(`(?m)^module\s+([A-Z][\w.']*)`)
	goSyntax      = syntax{line: "//", blockOpen: "/*", blockClose: "*/", quotes: "\"`"}
	goPackage     = regexp.MustCompile(`^\s*package\s+(\w+)`)
)

// erlang makes an escript a module, so that one driver runs both: a
// "#!" first line becomes a comment and code without -module gets
// "-module(main). " before its first line (line numbers stay). The run
// command compiles the module and calls main/1 with the arguments, or
// main/0.
func erlang(file string, src []byte) (Point, error) {
	out := bytes.Clone(src)
	if bytes.HasPrefix(out, []byte("#!")) {
		out[0] = '%'
	}
	if !erlangModule.Match(blank(out, erlangSyntax)) {
		out = append([]byte("-module(main). "), out...)
	}
	return Point{File: file, Main: "", Source: out}, nil
}

// clojure calls -main with the program's arguments after the script is
// loaded, when a namespace defines -main and the code does not call it
// itself.
func clojure(file string, src []byte) (Point, error) {
	b := blank(src, clojureSyntax)
	p := Point{File: file, Source: src}
	if !clojureDefn.Match(b) || len(clojureMain.FindAll(b, -1)) > 1 {
		return p, nil
	}
	ns := "user"
	if m := clojureNS.FindSubmatch(b); m != nil {
		ns = string(m[1]) // a name, never inside a string or a comment: the same in b as in src
	}
	p.Main = ns + "/-main"
	p.Source = append(bytes.Clone(src), []byte(fmt.Sprintf("\n(apply %s *command-line-args*)\n", p.Main))...)
	return p, nil
}

// haskell names the module whose main is the program's: Main, or the
// module the code declares (ghc -main-is).
func haskell(file string, src []byte) (Point, error) {
	p := Point{File: file, Main: "Main", Source: src}
	if m := haskellModule.FindSubmatch(blank(src, haskellSyntax)); m != nil {
		p.Main = string(m[1])
	}
	return p, nil
}

// golang checks that the code is package main, which is what go build
// makes a program of; any other package builds into nothing runnable.
func golang(file string, src []byte) (Point, error) {
	p := Point{File: file, Source: src}
	if m := goPackage.FindSubmatch(blank(src, goSyntax)); m != nil && string(m[1]) != "main" {
		return Point{}, fmt.Errorf("the code is `package %s`, but a Go program is `package main` with a `func main()`; "+
			"the runner builds the code as a program, so change the package clause to `package main`", m[1])
	}
	return p, nil
}
