package expression

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/expr-lang/expr/builtin"
)

// Limits that bound the work done on untrusted BPMN text. Real conditions
// are a few dozen tokens, so these are generous.
const (
	maxSourceLen = 1 << 20 // bytes; Literal of a large constant must still fit
	maxTokens    = 5000    // JUEL/FEEL tokens
	maxDepth     = 100     // nesting of parentheses, brackets and unary operators
	maxNodes     = 5000    // expr-lang AST nodes (expr.MaxNodes)
	memoryBudget = 1000000 // expr-lang VM memory units per evaluation
	genPrefix    = "_jb"   // prefix of let-variables created by the translator
)

// Dialect is the expression language of a source string.
type Dialect int

const (
	Expr Dialect = iota // expr-lang syntax, passed through unchanged
	JUEL                // ${...} or #{...} (Camunda 7)
	FEEL                // leading '=' (Zeebe / Camunda 8)
)

func (d Dialect) String() string {
	switch d {
	case Expr:
		return "expr"
	case JUEL:
		return "JUEL"
	case FEEL:
		return "FEEL"
	}
	return "Dialect(" + strconv.Itoa(int(d)) + ")"
}

// DialectOf classifies src after trimming spaces: JUEL when it starts with
// "${" or "#{" (Translate then requires the matching closing "}" to end the
// string), FEEL when it starts with '=', Expr otherwise. Neither prefix is
// valid expr-lang, so a JUEL text with a missing brace gets a JUEL error
// rather than a confusing expr-lang one.
func DialectOf(src string) Dialect {
	s := strings.TrimSpace(src)
	switch {
	case strings.HasPrefix(s, "${"), strings.HasPrefix(s, "#{"):
		return JUEL
	case strings.HasPrefix(s, "="):
		return FEEL
	}
	return Expr
}

// Translate returns the expr-lang source for src. Anything outside the
// supported subset is an *Error naming the construct.
func Translate(src string) (string, error) {
	out, err := translate(src)
	if err != nil {
		return "", err // never a typed nil in the interface
	}
	return out, nil
}

func translate(src string) (string, *Error) {
	if len(src) > maxSourceLen {
		return "", newError(src, -1, "expression too long (%d bytes, max %d)", len(src), maxSourceLen)
	}
	start := len(src) - len(strings.TrimLeftFunc(src, unicode.IsSpace))
	end := len(strings.TrimRightFunc(src, unicode.IsSpace))
	if start >= end {
		return "", newError(src, -1, "empty expression")
	}
	switch DialectOf(src) {
	case JUEL:
		return translateJUEL(src, start, end)
	case FEEL:
		return translateFEEL(src, start, end)
	}
	if err := checkNesting(src); err != nil {
		return "", err
	}
	return src, nil
}

// Literal returns an expr-lang source that evaluates to the string s.
// Invalid UTF-8 is replaced by U+FFFD, which expr-lang strings cannot avoid.
func Literal(s string) string {
	var b strings.Builder
	b.Grow(len(s) + 2)
	b.WriteByte('"')
	for _, r := range strings.ToValidUTF8(s, "\uFFFD") {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r': // expr-lang would normalize a raw CR away
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

func quote(s string) string { return strconv.Quote(s) }

// parser holds the state of one translation; nothing is shared between calls.
type parser struct {
	src     string
	dialect Dialect
	toks    []token
	i       int
	depth   int
	names   int       // counter for generated let-variables
	scope   []binding // FEEL quantifier variables and context keys, innermost last
	items   []string  // the let-variables of the FEEL filters around, innermost last
}

// binding is a name FEEL binds inside an expression: emit is what a use
// translates to, unless refuse says why a use cannot be translated; used,
// when set, records that a use was translated.
type binding struct {
	name, emit, refuse string
	used               *bool
}

func newParser(src string, start, end int, d Dialect) (*parser, *Error) {
	toks, err := tokenize(src, start, end, d)
	if err != nil {
		return nil, err
	}
	return &parser{src: src, dialect: d, toks: toks}, nil
}

func (p *parser) peek() token { return p.toks[p.i] }

func (p *parser) peekAt(k int) token {
	if p.i+k < len(p.toks) {
		return p.toks[p.i+k]
	}
	return p.toks[len(p.toks)-1] // EOF
}

func (p *parser) next() token {
	t := p.toks[p.i]
	if t.kind != tokEOF {
		p.i++
	}
	return t
}

func (p *parser) errAt(t token, format string, args ...any) *Error {
	return newError(p.src, t.pos, format, args...)
}

// enter guards recursion so hostile input cannot exhaust the stack.
func (p *parser) enter() *Error {
	p.depth++
	if p.depth > maxDepth {
		return p.errAt(p.peek(), "expression nested too deeply (more than %d levels)", maxDepth)
	}
	return nil
}

func (p *parser) leave() { p.depth-- }

// expect consumes the closing operator op that matches opener.
func (p *parser) expect(op string, opener token) *Error {
	t := p.peek()
	if t.isOp(op) {
		p.next()
		return nil
	}
	if t.kind == tokEOF || (p.dialect == JUEL && t.isOp("}")) {
		return p.errAt(opener, "missing closing %q for %q", op, opener.text)
	}
	return p.badAfterOperand(t)
}

func (p *parser) badAfterOperand(t token) *Error {
	if p.dialect == JUEL {
		return p.juelBadAfterOperand(t)
	}
	return p.feelBadAfterOperand(t)
}

// The binary operator levels, lowest precedence first, are the same count in
// both dialects: or, and, equality/comparison, ..., then unary.
const binaryLevels = 6

// binary parses one precedence level. Every operation is parenthesized in
// the output, and every fragment the parsers return is self-delimiting
// (an atom, a call, a path or a parenthesized form), so expr-lang's own
// precedence never matters. Chains are
// written with one builder to stay linear in the input size.
func (p *parser) binary(level int) (string, *Error) {
	if level == binaryLevels {
		if p.dialect == JUEL {
			return p.juelUnary()
		}
		return p.feelUnary()
	}
	first, err := p.binary(level + 1)
	if err != nil {
		return "", err
	}
	var rest []string // op, operand, op, operand...
	for {
		var op string
		var ok bool
		if p.dialect == JUEL {
			op, ok = juelBinaryOp(level, p.peek())
		} else {
			op, ok = feelBinaryOp(level, p.peek())
		}
		if !ok {
			break
		}
		p.next()
		x, err := p.binary(level + 1)
		if err != nil {
			return "", err
		}
		rest = append(rest, op, x)
	}
	if len(rest) == 0 {
		return first, nil
	}
	var b strings.Builder
	b.WriteString(strings.Repeat("(", len(rest)/2))
	b.WriteString(first)
	for k := 0; k < len(rest); k += 2 {
		b.WriteString(" " + rest[k] + " " + rest[k+1] + ")")
	}
	return b.String(), nil
}

// number re-emits a numeric literal in a form expr-lang reads the same way
// (no leading zeros, no leading '.').
func (p *parser) number(t token) (string, *Error) {
	if !strings.ContainsAny(t.text, ".eE") {
		n, err := strconv.ParseInt(t.text, 10, 64)
		if err != nil {
			return "", p.errAt(t, "integer literal %s out of range", t.text)
		}
		return strconv.FormatInt(n, 10), nil
	}
	f, err := strconv.ParseFloat(t.text, 64)
	if err != nil || math.IsInf(f, 0) {
		return "", p.errAt(t, "number literal %s out of range", t.text)
	}
	out := strconv.FormatFloat(f, 'g', -1, 64)
	if !strings.ContainsAny(out, ".e") {
		out += ".0"
	}
	return out, nil
}

// postfixBase makes s safe to follow with ?. or ?.[ : expr-lang does not
// accept them directly after a number literal.
func postfixBase(s string) string {
	if s != "" && (isDigit(s[0]) || s[0] == '.') {
		return "(" + s + ")"
	}
	return s
}

func (p *parser) fresh() string {
	p.names++
	return genPrefix + strconv.Itoa(p.names)
}

// emptyCheck implements JUEL's empty: true for nil and for empty strings,
// lists and maps; false for anything else (numbers, booleans). The operand
// is bound once with let so it is neither re-evaluated nor duplicated.
func (p *parser) emptyCheck(x string) string {
	v := p.fresh()
	return "(let " + v + " = " + x + "; " + v + " == nil || (type(" + v + `) in ["string", "array", "map"] && len(` + v + ") == 0))"
}

// ident emits a reference to the process variable name. Names that
// expr-lang would read as a keyword or builtin, or that are not plain ASCII
// identifiers, are looked up through $env instead.
func ident(name string) string {
	if safeIdent(name) {
		return name
	}
	return "$env[" + Literal(name) + "]"
}

// member emits nil-safe property access: JUEL and FEEL both yield null for
// a property of null, and a missing map key is nil in expr-lang.
func member(name string) string {
	if safeIdent(name) {
		return "?." + name
	}
	return "?.[" + Literal(name) + "]"
}

func safeIdent(name string) bool {
	if name == "" || strings.HasPrefix(name, genPrefix) {
		return false
	}
	for i, c := range []byte(name) {
		ok := c == '_' || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') || (i > 0 && isDigit(c))
		if !ok {
			return false
		}
	}
	switch name {
	case "true", "false", "nil", "and", "or", "not", "in", "matches", "contains",
		"startsWith", "endsWith", "let", "if", "else":
		return false
	}
	return !slices.Contains(builtin.Names, name)
}

// checkNesting bounds bracket depth of expr-lang sources before expr-lang's
// recursive parser sees them.
func checkNesting(src string) *Error {
	depth := 0
	for i := 0; i < len(src); i++ {
		switch c := src[i]; c {
		case '"', '\'', '`':
			for i++; i < len(src) && src[i] != c; i++ {
				if src[i] == '\\' && c != '`' {
					i++
				}
			}
		case '(', '[', '{':
			depth++
			if depth > maxDepth {
				return newError(src, i, "expression nested too deeply (more than %d levels)", maxDepth)
			}
		case ')', ']', '}':
			depth--
		}
	}
	return nil
}
