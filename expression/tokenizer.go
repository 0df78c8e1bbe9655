package expression

import (
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// The tokenizer is shared by the JUEL and FEEL front ends. Translating token by
// token (instead of rewriting text) is what keeps operators inside string
// literals, such as "a and b" or "}", untouched.

type tokenKind uint8

const (
	tokEOF tokenKind = iota
	tokIdent
	tokNumber
	tokString
	tokOp
)

type token struct {
	kind tokenKind
	text string // identifier, number or operator text; the decoded value of a string
	pos  int    // byte offset in the original source
}

func (t token) isOp(s string) bool   { return t.kind == tokOp && t.text == s }
func (t token) isWord(s string) bool { return t.kind == tokIdent && t.text == s }

// describe names a token for error messages.
func (t token) describe() string {
	switch t.kind {
	case tokEOF:
		return "end of expression"
	case tokString:
		return "string " + Literal(t.text)
	case tokNumber:
		return "number " + t.text
	}
	return quote(t.text)
}

// multiOps are matched before single-character operators. Some exist only so
// that the parsers can refuse them by name ("..", "->", "+=").
var multiOps = [...]string{"**", "==", "!=", "<=", ">=", "&&", "||", "..", "->", "+="}

const singleOps = "=<>!+-*/%?:()[]{}.,;@#&|^~`"

// tokenize splits src[start:end] into tokens; positions stay relative to src.
func tokenize(src string, start, end int, d Dialect) ([]token, *Error) {
	var toks []token
	i := start
	for {
		for i < end {
			r, n := utf8.DecodeRuneInString(src[i:end])
			if !unicode.IsSpace(r) {
				break
			}
			i += n
		}
		if i >= end {
			return append(toks, token{kind: tokEOF, pos: end}), nil
		}
		if len(toks) >= maxTokens {
			return nil, newError(src, i, "expression too long (more than %d tokens)", maxTokens)
		}
		c := src[i]
		r, n := utf8.DecodeRuneInString(src[i:end])
		switch {
		case isDigit(c) || (c == '.' && i+1 < end && isDigit(src[i+1]) && !endsOperand(toks)):
			j := scanNumber(src, i, end)
			toks = append(toks, token{kind: tokNumber, text: src[i:j], pos: i})
			i = j
		case c == '"' || (c == '\'' && d == JUEL):
			s, j, err := scanString(src, i, end, d)
			if err != nil {
				return nil, err
			}
			toks = append(toks, token{kind: tokString, text: s, pos: i})
			i = j
		case c == '\'':
			return nil, newError(src, i, "unsupported FEEL single-quoted string or name (use double quotes)")
		case isIdentStart(r, d):
			j := i + n
			for j < end {
				r2, n2 := utf8.DecodeRuneInString(src[j:end])
				if !isIdentPart(r2, d) {
					break
				}
				j += n2
			}
			toks = append(toks, token{kind: tokIdent, text: src[i:j], pos: i})
			i = j
		default:
			op := ""
			for _, m := range multiOps {
				if strings.HasPrefix(src[i:end], m) {
					op = m
					break
				}
			}
			if op == "" && strings.IndexByte(singleOps, c) >= 0 {
				op = src[i : i+1]
			}
			if op == "" {
				return nil, newError(src, i, "unexpected character %q", r)
			}
			toks = append(toks, token{kind: tokOp, text: op, pos: i})
			i += len(op)
		}
	}
}

// endsOperand reports whether the previous token can end an operand, in which
// case a following '.' is member access rather than the start of ".5".
func endsOperand(toks []token) bool {
	if len(toks) == 0 {
		return false
	}
	t := toks[len(toks)-1]
	return t.kind == tokIdent || t.kind == tokNumber || t.kind == tokString || t.isOp(")") || t.isOp("]")
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

func isIdentStart(r rune, d Dialect) bool {
	return r == '_' || unicode.IsLetter(r) || (r == '$' && d == JUEL)
}

func isIdentPart(r rune, d Dialect) bool {
	return isIdentStart(r, d) || unicode.IsDigit(r)
}

// scanNumber accepts digits, an optional fraction and an optional exponent.
// "1..5" stays 1 followed by "..", so FEEL ranges can be refused by name.
func scanNumber(src string, i, end int) int {
	for i < end && isDigit(src[i]) {
		i++
	}
	if i+1 < end && src[i] == '.' && isDigit(src[i+1]) {
		i++
		for i < end && isDigit(src[i]) {
			i++
		}
	}
	if i < end && (src[i] == 'e' || src[i] == 'E') {
		j := i + 1
		if j < end && (src[j] == '+' || src[j] == '-') {
			j++
		}
		if j < end && isDigit(src[j]) {
			for j < end && isDigit(src[j]) {
				j++
			}
			i = j
		}
	}
	return i
}

// scanString decodes a string literal starting at src[i]. JUEL (EL) only knows
// the escapes \\ \' \"; FEEL adds \n \r \t \uXXXX and \UXXXXXX.
func scanString(src string, i, end int, d Dialect) (string, int, *Error) {
	q := src[i]
	var b strings.Builder
	j := i + 1
	for j < end {
		c := src[j]
		switch {
		case c == q:
			return b.String(), j + 1, nil
		case c != '\\':
			b.WriteByte(c)
			j++
			continue
		}
		if j+1 >= end {
			break
		}
		e := src[j+1]
		switch {
		case e == '\\' || e == '"' || e == '\'':
			b.WriteByte(e)
			j += 2
		case d == FEEL && (e == 'n' || e == 'r' || e == 't'):
			b.WriteByte("\n\r\t"[strings.IndexByte("nrt", e)])
			j += 2
		case d == FEEL && (e == 'u' || e == 'U'):
			r, k, ok := scanUnicodeEscape(src, j, end)
			if !ok {
				return "", 0, newError(src, j, "invalid unicode escape in string literal")
			}
			b.WriteRune(r)
			j = k
		default:
			return "", 0, newError(src, j, "invalid escape sequence %q in string literal", src[j:j+2])
		}
	}
	return "", 0, newError(src, i, "unterminated string literal")
}

// scanUnicodeEscape reads \uXXXX (joining UTF-16 surrogate pairs) or \UXXXXXX.
func scanUnicodeEscape(src string, j, end int) (rune, int, bool) {
	n := 4
	if src[j+1] == 'U' {
		n = 6
	}
	r, ok := parseHex(src, j+2, n, end)
	if !ok || r > unicode.MaxRune {
		return 0, 0, false
	}
	j += 2 + n
	if n == 4 && utf16.IsSurrogate(r) && j+6 <= end && src[j] == '\\' && src[j+1] == 'u' {
		if r2, ok := parseHex(src, j+2, 4, end); ok {
			if dec := utf16.DecodeRune(r, r2); dec != unicode.ReplacementChar {
				return dec, j + 6, true
			}
		}
	}
	return r, j, true
}

func parseHex(src string, i, n, end int) (rune, bool) {
	if i+n > end {
		return 0, false
	}
	var r rune
	for _, c := range []byte(src[i : i+n]) {
		switch {
		case isDigit(c):
			r = r<<4 | rune(c-'0')
		case 'a' <= c && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case 'A' <= c && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}
