// Package expression compiles and evaluates the condition and mapping
// expressions found in BPMN files. Everything runs on expr-lang
// (github.com/expr-lang/expr); JUEL and FEEL texts are first translated to
// expr-lang source by a small tokenizer and parser, never by rewriting text.
//
// # Dialects
//
// The dialect is chosen from the text itself (see DialectOf):
//
//   - JUEL (Camunda 7): the whole text is "${...}" or "#{...}".
//   - FEEL (Zeebe / Camunda 8): the text starts with '='.
//   - Expr: anything else is expr-lang syntax, used unchanged (Go builder API).
//
// # Supported JUEL subset
//
//   - names and paths a.b.c, index a[i] (0-based), numbers, 'single' and
//     "double" quoted strings (escapes \\ \' \"), true, false, null
//   - == != < <= > >= && || ! + - * / % and eq ne lt le gt ge and or not div mod
//   - c ? a : b, parentheses, empty x
//
// empty x is true for null and for empty strings, lists and maps, and false
// for any other value (a number is never empty and never an error).
// Refused: method and function calls (execution.getVariable("x"), fn:f()),
// instanceof, assignment, lambdas, collection literals. Compile takes one
// whole ${...}; a composite text such as "user-${id}" or "${a} and ${b}"
// (text and expressions, concatenated as strings, null as "") is
// translated by TranslateComposite, whose result Compile takes (IsComposite
// tells one apart). The importer does that for Camunda 7 attributes.
//
// # Supported FEEL subset
//
//   - names and paths, numbers, "double quoted" strings (escapes \" \\ \' \n
//     \r \t \uXXXX \UXXXXXX), true, false, null, list literals [1, 2],
//     contexts {name: "x", "id": 1} (keys are names or strings; an entry
//     may use the earlier entries, {a: 1, b: a + 1})
//   - = (equality) != < <= > >= and or + - * / ** and parentheses
//   - a[n] with an integer literal n: 1-based as in FEEL (a[1] is the first
//     element, a[-1] the last); a filter a[cond] — a condition that names
//     item, compares, or combines with and/or/not — keeps the elements it
//     holds for, an element that is a context showing its entries by name
//     before the variables, and a path after it maps over the elements
//     (a[v = 2].name is the list of their names); a computed index a[i]
//     is refused
//   - some/every x in coll {, y in coll2} satisfies pred (any/all in expr-lang)
//   - for x in coll {, y in coll2} return expr (map in expr-lang; several
//     iteration contexts give one flat list, x outermost; no ranges and
//     no "partial")
//   - if c then a else b (any non-true c selects b, as in FEEL)
//   - functions: not(x), string length(s), upper case(s), lower case(s),
//     count(list), contains(s, sub), starts with(s, p), ends with(s, p),
//     list contains(list, x), string join(list [, delimiter [, prefix,
//     suffix]]) (null elements skipped; an element that is not a string is
//     an evaluation error, where FEEL would give null); is defined(x)
//     (x is not null: a variable set to null counts as undefined, as in
//     Camunda 8's FEEL); floor(n), ceiling(n), abs(n), round down(n [,
//     scale]), round up, round half up, round half down; string(x),
//     number(s); substring(s, start [, length]), substring before(s, m),
//     substring after(s, m), replace(s, pattern, replacement [, flags]),
//     matches(s, pattern [, flags]), split(s, pattern), trim(s) (patterns
//     are RE2 regular expressions, flags i, s and m), append(list, x...),
//     concatenate(lists...), sum, min, max, mean (of a list or of the
//     arguments), distinct values(list), flatten(list), reverse(list),
//     index of(list, x), get value(context, key) — an argument of the
//     wrong type gives null, as in FEEL; and the functions
//     of Camunda 8 connectors' error expressions, bpmnError(code,
//     message [, variables]) and jobError(message [, variables [,
//     retries [, retryBackoff]]]), which give the context they describe
//     with "errorType" naming the function (retryBackoff a duration
//     string such as "PT30S": temporal literals are refused)
//
// Refused: between, instance of, ranges (1..5), unary tests (in, ?,
// "< 5"), other function calls, names with spaces, backquoted names,
// temporal literals @"...".
//
// # Semantics
//
// Variables absent from the map evaluate to nil, and a property of nil is
// nil (paths use expr-lang's ?.), as in JUEL and FEEL. Numbers of any Go
// type compare and combine (int64 1500 == float64 1500). Everything else is
// expr-lang semantics, not JUEL's or FEEL's: there is no string/number
// coercion, "/" always yields a float, "%" needs integers, nil in arithmetic,
// ordering comparisons and ! is an evaluation error, and nil in and/or
// yields nil or an error (EvalBool rejects both), whereas JUEL would read
// null as false. Comparing nil with == and != works.
//
// # Errors
//
// Translate, Compile and Eval return *Error, which carries the source text,
// the byte offset of the problem in it (-1 when unknown) and a message
// naming the offending construct. Evaluation never panics, and compilation
// and evaluation are bounded (source size, nesting depth, AST nodes and the
// expr-lang VM memory budget).
package expression

import (
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/file"
	"github.com/expr-lang/expr/vm"
)

// Expression is a compiled, immutable expression, safe for concurrent use.
// The zero value is not usable; obtain one from Compile or MustCompile.
type Expression struct {
	source     string
	translated string
	dialect    Dialect
	program    *vm.Program
}

// Compile translates src (see Translate) and compiles it with expr-lang.
func Compile(src string) (*Expression, error) {
	translated, terr := translate(src)
	if terr != nil {
		return nil, terr
	}
	d := DialectOf(src)
	program, err := expr.Compile(translated, append([]expr.Option{expr.AllowUndefinedVariables(), expr.MaxNodes(maxNodes)}, feelFunctions...)...)
	if err != nil {
		return nil, wrapExprError(src, translated, d, err)
	}
	return &Expression{source: src, translated: translated, dialect: d, program: program}, nil
}

// MustCompile is Compile that panics on error, for expressions fixed in code.
func MustCompile(src string) *Expression {
	e, err := Compile(src)
	if err != nil {
		panic(err)
	}
	return e
}

// Source returns the original text.
func (e *Expression) Source() string { return e.source }

// String returns the original text.
func (e *Expression) String() string { return e.source }

// Dialect returns the dialect the source was written in.
func (e *Expression) Dialect() Dialect { return e.dialect }

// Translated returns the expr-lang source that is actually evaluated.
func (e *Expression) Translated() string { return e.translated }

// Eval evaluates the expression against the process variables vars
// (JSON-like values; nil is an empty map).
func (e *Expression) Eval(vars map[string]any) (result any, err error) {
	if e == nil || e.program == nil {
		return nil, &Error{Offset: -1, Msg: "expression is not compiled"}
	}
	defer func() {
		if r := recover(); r != nil { // expr-lang recovers itself; this is a backstop
			result, err = nil, &Error{Source: e.source, Offset: -1, Msg: fmt.Sprintf("evaluation panicked: %v", r)}
		}
	}()
	if vars == nil {
		vars = map[string]any{}
	}
	machine := vm.VM{MemoryBudget: memoryBudget} // one VM per call: Program is shared, VM is not
	out, runErr := machine.Run(e.program, vars)
	if runErr != nil {
		return nil, wrapExprError(e.source, e.translated, e.dialect, runErr)
	}
	return out, nil
}

// EvalBool evaluates a condition; a result that is not a bool is an error.
func (e *Expression) EvalBool(vars map[string]any) (bool, error) {
	out, err := e.Eval(vars)
	if err != nil {
		return false, err
	}
	b, ok := out.(bool)
	if !ok {
		return false, &Error{Source: e.source, Offset: -1, Msg: "condition result is " + typeName(out) + ", want bool"}
	}
	return b, nil
}

func typeName(v any) string {
	if v == nil {
		return "nil"
	}
	return fmt.Sprintf("%T", v)
}

// Error is returned by Translate, Compile and Eval.
type Error struct {
	Source string // the original expression text
	Offset int    // byte offset in Source, -1 if unknown
	Msg    string
	Err    error // underlying expr-lang error, if any
}

func newError(src string, off int, format string, args ...any) *Error {
	return &Error{Source: src, Offset: off, Msg: fmt.Sprintf(format, args...)}
}

// maxShownSource keeps error strings readable for huge inputs.
const maxShownSource = 200

func (e *Error) Error() string {
	src := e.Source
	if len(src) > maxShownSource {
		cut := maxShownSource
		for cut > 0 && !utf8.RuneStart(src[cut]) {
			cut--
		}
		src = src[:cut] + "..."
	}
	s := fmt.Sprintf("expression %q: %s", src, e.Msg)
	if e.Offset >= 0 {
		s += fmt.Sprintf(" at offset %d", e.Offset)
	}
	return s
}

func (e *Error) Unwrap() error { return e.Err }

// wrapExprError converts an expr-lang error. Its position refers to the
// translated text, so it maps to an offset only for the Expr dialect; for
// JUEL and FEEL the translation is quoted instead.
func wrapExprError(src, translated string, d Dialect, err error) *Error {
	out := &Error{Source: src, Offset: -1, Msg: err.Error(), Err: err}
	var fe *file.Error
	if errors.As(err, &fe) {
		out.Msg = fe.Message
		if d == Expr {
			out.Offset = runeOffset(src, fe.From)
		} else {
			out.Msg += fmt.Sprintf(" (in %s translated to %q)", d, translated)
		}
	}
	return out
}

// runeOffset converts expr-lang's rune index to a byte offset.
func runeOffset(s string, runes int) int {
	if runes < 0 {
		return -1
	}
	for i := range s {
		if runes == 0 {
			return i
		}
		runes--
	}
	if runes == 0 {
		return len(s)
	}
	return -1
}
