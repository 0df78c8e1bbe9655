package expression

import (
	"errors"
	"strings"
	"testing"

	exprparser "github.com/expr-lang/expr/parser"
)

func fuzzVars() map[string]any {
	return map[string]any{
		"a": "text", "b": int64(2), "c": 1.5, "d": nil, "e": true,
		"l": []any{1, "x", nil, []any{}}, "m": map[string]any{"k": map[string]any{"v": 1}, "s": "y"},
	}
}

// FuzzTranslate asserts that Translate, Compile and Eval never panic, that
// failures are *Error, and that every JUEL/FEEL translation is valid
// expr-lang syntax.
func FuzzTranslate(f *testing.F) {
	for _, s := range []string{
		"= approved", "= not(approved)", "=fraud", "#{!approved}", "#{approved}", "${score > 5}", "${score <= 5}",
		"= loopAmount != totalLoops", `= reviewResult = "approved"`, "=conditionVariable=false", "=price = 0", "price > 0",
		`= some risk in riskLevels satisfies risk = "red"`, `= every risk in riskLevels satisfies risk = "yellow"`,
		`${execution.getVariable("x")}`, "= for x in y return x", "= x between 1 and 2", "= [1..5]", "${a eqq b}",
		"= for x in l, y in [1] return x + y", "${'a}b' == \"c\\\"\"}", "${empty m.k ? l[0] : -c}", "= if e then l[1] else m.k.v", "= some x in l, y in [1] satisfies x = y",
		"${a.b.c}", "= a.b.c", "a.b.c", "${(((a)))}", "= .5 + 1e3", "= string length(a)", "${", "=", "${a", "= (", "= \"\\u", "=if e then 0[1]else 0*0*0", "${1.5.a}",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		out, err := Translate(src)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || e.Source != src || e.Offset > len(src) {
				t.Fatalf("Translate(%q) error %v is not a well-formed *Error", src, err)
			}
		} else if DialectOf(src) != Expr {
			if _, perr := exprparser.Parse(out); perr != nil && !strings.Contains(perr.Error(), "maximum allowed nodes") {
				t.Fatalf("Translate(%q) = %q, which expr-lang cannot parse: %v", src, out, perr)
			}
		}
		e, err := Compile(src)
		if err != nil {
			return
		}
		_, _ = e.Eval(fuzzVars())
		_, _ = e.EvalBool(nil)
	})
}

// FuzzLiteral asserts that Literal round-trips any valid UTF-8 string.
func FuzzLiteral(f *testing.F) {
	for _, s := range []string{"", `"\`, "a\r\nb", "\x00", "é😀", "\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := MustCompile(Literal(s)).Eval(nil)
		if want := strings.ToValidUTF8(s, "\uFFFD"); err != nil || v != want {
			t.Fatalf("Literal(%q) evaluates to %#v, %v", s, v, err)
		}
	})
}
