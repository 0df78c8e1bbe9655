package expression

import (
	"errors"
	"strings"
	"sync"
	"testing"
)

func TestEvalUndefinedIsNil(t *testing.T) {
	for _, src := range []string{"missing", "${missing}", "= missing", "${missing.a.b}", "= missing.a[1]", "${missing['k']}"} {
		v, err := MustCompile(src).Eval(map[string]any{"other": 1})
		if err != nil || v != nil {
			t.Errorf("%s = %#v, %v; want nil, nil", src, v, err)
		}
	}
	if v, err := MustCompile("${x}").Eval(nil); err != nil || v != nil {
		t.Errorf("nil vars: %#v, %v", v, err)
	}
}

func TestEvalBool(t *testing.T) {
	e := MustCompile("${name}")
	for _, tt := range []struct {
		vars map[string]any
		typ  string
	}{
		{map[string]any{"name": "bob"}, "string"},
		{map[string]any{"name": 1.5}, "float64"},
		{map[string]any{}, "nil"},
	} {
		_, err := e.EvalBool(tt.vars)
		var ee *Error
		if !errors.As(err, &ee) {
			t.Fatalf("EvalBool(%v) error = %v, want *Error", tt.vars, err)
		}
		want := `expression "${name}": condition result is ` + tt.typ + ", want bool"
		if err.Error() != want {
			t.Errorf("error = %q, want %q", err, want)
		}
	}
	if b, err := e.EvalBool(map[string]any{"name": true}); err != nil || !b {
		t.Errorf("EvalBool(true) = %v, %v", b, err)
	}
}

func TestEvalMixedNumbers(t *testing.T) {
	amounts := []any{float64(1500), int64(1500), 1500, uint64(1500), int32(1500)}
	conds := []string{"amount > 1000", "${amount > 1000}", "#{amount gt 1000.5}", "= amount > 1000", "= amount = 1500", "${amount == 1500.0}", "= amount * 2 >= 3000"}
	for _, amount := range amounts {
		for _, src := range conds {
			ok, err := MustCompile(src).EvalBool(map[string]any{"amount": amount})
			if err != nil || !ok {
				t.Errorf("%s with %T: %v, %v; want true", src, amount, ok, err)
			}
		}
	}
	ok, err := MustCompile("= a = b").EvalBool(map[string]any{"a": int64(3), "b": 3.0})
	if err != nil || !ok {
		t.Errorf("int64 3 = float64 3: %v, %v", ok, err)
	}
}

func TestEvalNestedPaths(t *testing.T) {
	vars := map[string]any{"order": map[string]any{
		"customer": map[string]any{"name": "Ann", "vip": true},
		"lines":    []any{map[string]any{"sku": "A"}, map[string]any{"sku": "B"}},
	}}
	tests := map[string]any{
		"order.customer.name":           "Ann",
		"${order.customer.name}":        "Ann",
		"= order.customer.name":         "Ann",
		"${order.customer.vip}":         true,
		"${order.lines[1].sku}":         "B",
		"= order.lines[2].sku":          "B",
		"= order.lines[-1].sku":         "B",
		"${order.customer.missing}":     nil,
		"= order.customer.missing.deep": nil,
	}
	for src, want := range tests {
		v, err := MustCompile(src).Eval(vars)
		if err != nil || v != want {
			t.Errorf("%s = %#v, %v; want %#v", src, v, err, want)
		}
	}
}

// Wrong shapes must give an error or nil, never a panic.
func TestEvalNoPanic(t *testing.T) {
	srcs := []string{"a.b.c", "${a.b.c}", "= a.b.c", "${a[0]}", "${a[5]}", "= a[3]", "${a['k'].x}", "${a > 1}", "${!a}", "${-a}",
		"${a + 1}", "${a div 0}", "${a mod 0}", "= a / 0", "= some x in a satisfies x", "= string length(a)", "= contains(a, \"b\")", "${empty a.b}"}
	values := []any{nil, "str", 42, 4.2, true, []any{1}, map[string]any{"b": "x"}, []any{}, map[string]any{}}
	for _, src := range srcs {
		e := MustCompile(src)
		for _, v := range values {
			func() {
				defer func() {
					if r := recover(); r != nil {
						t.Errorf("%s with a=%#v panicked: %v", src, v, r)
					}
				}()
				_, err := e.Eval(map[string]any{"a": v})
				if err != nil {
					var ee *Error
					if !errors.As(err, &ee) || ee.Source != src {
						t.Errorf("%s with a=%#v: error %v is not an *Error for the source", src, v, err)
					}
				}
			}()
		}
	}
}

func TestEvalRuntimeErrors(t *testing.T) {
	tests := []struct{ src, msg string }{
		{`repeat("ab", 100000000)`, "memory budget exceeded"},
		{`len(map(1..10000000, #))`, "memory budget exceeded"},
		{"${a > 1}", "in JUEL translated to"},
		{"= a.b", "in FEEL translated to"},
	}
	for _, tt := range tests {
		_, err := MustCompile(tt.src).Eval(map[string]any{"a": "text"})
		if err == nil || !strings.Contains(err.Error(), tt.msg) {
			t.Errorf("%s: error %v, want it to contain %q", tt.src, err, tt.msg)
		}
		if err != nil && errors.Unwrap(err) == nil {
			t.Errorf("%s: error does not wrap the expr-lang error", tt.src)
		}
	}
}

func TestZeroAndMust(t *testing.T) {
	var nilExpr *Expression
	if _, err := nilExpr.Eval(nil); err == nil {
		t.Error("nil *Expression evaluated without error")
	}
	if _, err := (&Expression{}).EvalBool(nil); err == nil {
		t.Error("zero Expression evaluated without error")
	}
	defer func() {
		if recover() == nil {
			t.Error("MustCompile did not panic on an invalid expression")
		}
	}()
	MustCompile("${a eqq b}")
}

func TestAccessors(t *testing.T) {
	e := MustCompile(" ${a} ")
	if e.Source() != " ${a} " || e.String() != " ${a} " || e.Dialect() != JUEL || e.Translated() != "a" {
		t.Errorf("accessors: %q %q %v %q", e.Source(), e.String(), e.Dialect(), e.Translated())
	}
}

func TestConcurrentEval(t *testing.T) {
	e := MustCompile(`= some r in risks satisfies r = level`)
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Go(func() {
			for j := range 200 {
				want := (i+j)%2 == 0
				level := "low"
				if want {
					level = "red"
				}
				got, err := e.EvalBool(map[string]any{"risks": []any{"red", "amber"}, "level": level})
				if err != nil || got != want {
					t.Errorf("got %v, %v; want %v", got, err, want)
					return
				}
			}
		})
	}
	wg.Wait()
}

func BenchmarkEvalBool(b *testing.B) {
	e := MustCompile(`${amount > 1000 && customer.tier == "gold"}`)
	vars := map[string]any{"amount": 1500.0, "customer": map[string]any{"tier": "gold"}}
	b.ReportAllocs()
	for b.Loop() {
		if ok, err := e.EvalBool(vars); err != nil || !ok {
			b.Fatal(ok, err)
		}
	}
}
