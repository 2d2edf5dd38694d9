package entry

import "strings"

import "unicode"

// token is a word, a string literal or one punctuation character of
// C-family source; comments and white space are dropped.
type token struct {
	text string
	str  bool // a string literal; text is its content (escapes left as written)
}

// cTokens splits Java or Kotlin source into tokens. templates turns on
// Kotlin's: "${...}" in a string holds code, strings included, and block
// comments nest.
func cTokens(src string, templates bool) []token {
	var toks []token
	rs := []rune(src)
	n := len(rs)
	// skipString returns the index after the string literal that starts at
	// i with quote (`"` or `"""`).
	var skipString func(i int, triple bool) (int, string)
	skipCode := func(i int) int { // from after "${" to after its "}"
		depth := 1
		for i < n && depth > 0 {
			switch rs[i] {
			case '"':
				triple := i+2 < n && rs[i+1] == '"' && rs[i+2] == '"'
				i, _ = skipString(i, triple)
				continue
			case '{':
				depth++
			case '}':
				depth--
			}
			i++
		}
		return i
	}
	skipString = func(i int, triple bool) (int, string) {
		if triple {
			i += 3
			start := i
			for i < n {
				if templates && rs[i] == '$' && i+1 < n && rs[i+1] == '{' {
					i = skipCode(i + 2)
					continue
				}
				if rs[i] == '"' && i+2 < n && rs[i+1] == '"' && rs[i+2] == '"' {
					end := i
					for i < n && rs[i] == '"' { // """ may be followed by more quotes that belong to the text
						i++
					}
					return i, string(rs[start:end])
				}
				i++
			}
			return n, string(rs[start:])
		}
		i++
		start := i
		for i < n && rs[i] != '"' && rs[i] != '\n' {
			switch {
			case rs[i] == '\\':
				i += 2
				continue
			case templates && rs[i] == '$' && i+1 < n && rs[i+1] == '{':
				i = skipCode(i + 2)
				continue
			}
			i++
		}
		return min(i+1, n), string(rs[start:min(i, n)])
	}
	for i := 0; i < n; {
		c := rs[i]
		switch {
		case unicode.IsSpace(c):
			i++
		case c == '/' && i+1 < n && rs[i+1] == '/':
			for i < n && rs[i] != '\n' {
				i++
			}
		case c == '/' && i+1 < n && rs[i+1] == '*':
			depth := 0
			for i < n {
				if rs[i] == '/' && i+1 < n && rs[i+1] == '*' {
					depth++
					i += 2
					continue
				}
				if rs[i] == '*' && i+1 < n && rs[i+1] == '/' {
					depth--
					i += 2
					if depth == 0 || !templates {
						break
					}
					continue
				}
				i++
			}
		case c == '"':
			triple := i+2 < n && rs[i+1] == '"' && rs[i+2] == '"'
			var text string
			i, text = skipString(i, triple)
			toks = append(toks, token{text: text, str: true})
		case c == '\'':
			i++
			for i < n && rs[i] != '\'' && rs[i] != '\n' {
				if rs[i] == '\\' {
					i++
				}
				i++
			}
			i++
			toks = append(toks, token{text: "'c'"})
		case c == '`' && templates:
			j := i + 1
			for j < n && rs[j] != '`' && rs[j] != '\n' {
				j++
			}
			toks = append(toks, token{text: string(rs[i+1 : min(j, n)])})
			i = j + 1
		case c == '_' || c == '$' || unicode.IsLetter(c) || unicode.IsDigit(c):
			j := i
			for j < n && (rs[j] == '_' || rs[j] == '$' || unicode.IsLetter(rs[j]) || unicode.IsDigit(rs[j])) {
				j++
			}
			toks = append(toks, token{text: string(rs[i:j])})
			i = j
		default:
			toks = append(toks, token{text: string(c)})
			i++
		}
	}
	return toks
}

func isIdent(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		if r != '_' && r != '$' && !unicode.IsLetter(r) && (i == 0 || !unicode.IsDigit(r)) {
			return false
		}
	}
	return true
}

// qualifiedName reads "a.b.c" starting at toks[i]; it returns the name and
// the index after it.
func qualifiedName(toks []token, i int) (string, int) {
	var name strings.Builder
	for i < len(toks) && isIdent(toks[i].text) && !toks[i].str {
		name.WriteString(toks[i].text)
		i++
		if i+1 < len(toks) && toks[i].text == "." && isIdent(toks[i+1].text) {
			name.WriteString(".")
			i++
			continue
		}
		break
	}
	return name.String(), i
}
