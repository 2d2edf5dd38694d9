package entry

import (
	"bytes"
	"regexp"
	"strings"
)

// The conventions of this file decide a program's source form: what the
// compiler must be told because the code alone says it (COBOL written in
// free or fixed format, x86 assembly written for 32 or 64 bits). The
// result is Point.Form, which the language's commands use as "{form}".

var cobolFreeDirective = regexp.MustCompile(`(?i)^\s*(?:>>\s*SOURCE\s+(?:FORMAT\s+)?(?:IS\s+)?FREE|\$\s*SET\s+SOURCEFORMAT\s*[("']*\s*FREE)\b`)

// cobol reads the code's format: "free" when its first line that is not
// blank is a directive naming free format (>>SOURCE FORMAT FREE, Micro
// Focus's $SET SOURCEFORMAT"FREE"), or when any line has in column 7
// (tabs stopping every 8 columns, as the compiler reads them) a character
// that fixed format does not allow there: fixed format keeps columns 1-6
// for sequence numbers and column 7 for an indicator (a space, a comment's
// * or /, a continuation's -, a debugging line's D, $ and the > of a >>
// directive), so code that starts before column 8 is free format. Else
// "fixed", the compiler's default.
func cobol(file string, src []byte) (Point, error) {
	p := Point{File: file, Source: src, Form: "fixed"}
	first := true
	for line := range bytes.Lines(src) {
		l := expandTabs(strings.TrimRight(string(line), "\r\n"))
		if first && strings.TrimSpace(l) != "" {
			first = false
			if cobolFreeDirective.MatchString(l) {
				p.Form = "free"
				return p, nil
			}
		}
		if len(l) >= 7 && !strings.ContainsRune(" */-dD$>", rune(l[6])) {
			p.Form = "free"
			return p, nil
		}
	}
	return p, nil
}

// expandTabs replaces each tab of l with the spaces up to the next tab
// stop, stops every 8 columns.
func expandTabs(l string) string {
	if !strings.Contains(l, "\t") {
		return l
	}
	var b strings.Builder
	for _, r := range l {
		if r == '\t' {
			b.WriteString(strings.Repeat(" ", 8-b.Len()%8))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

var (
	asmSyntax = syntax{line: ";", quotes: "\"'`"}
	asmBits   = regexp.MustCompile(`(?im)^\s*\[?\s*bits\s+(32|64)\b`)
	// asm64 is what only 64-bit code writes: a 64-bit register or the
	// syscall instruction.
	asm64 = regexp.MustCompile(`(?i)\b(?:r[abcd]x|r[sd]i|r[sb]p|r(?:8|9|1[0-5])[dwb]?|rip|syscall)\b`)
	// asm32 is what only 32-bit code writes: Linux's 32-bit system call
	// (int 0x80), or a 32-bit register pushed or popped, pusha/popa, a
	// stack frame addressed through esp or ebp.
	asm32 = regexp.MustCompile(`(?i)\bint\s+(?:0x80|80h|128)\b|\b(?:push|pop)\s+(?:dword\s+)?e(?:ax|bx|cx|dx|si|di|bp|sp)\b|\b(?:push|pop)\s+dword\b|\b(?:pusha|popa|pushad|popad)\b|\[\s*e[sb]p\b`)
)

// asm reads whether the code is 32-bit or 64-bit x86 assembly: "32" when it
// says BITS 32, or writes what only 32-bit code writes (int 0x80 system
// calls, 32-bit registers pushed, an esp or ebp stack frame) and nothing
// that only 64-bit code writes (a 64-bit register, syscall); else "64".
// Comments and strings do not count.
func asm(file string, src []byte) (Point, error) {
	p := Point{File: file, Source: src, Form: "64"}
	b := blank(src, asmSyntax)
	if m := asmBits.FindSubmatch(b); m != nil {
		p.Form = string(m[1])
		return p, nil
	}
	if asm32.Match(b) && !asm64.Match(b) {
		p.Form = "32"
	}
	return p, nil
}
