package expression

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/expr-lang/expr"
)

// FEEL's string and list functions that expr-lang has no builtin for are
// Go functions the translation calls by these names (feelFunctions).
// Each follows FEEL: an argument of the wrong type gives null, never an
// error; positions are 1-based, negative ones count from the end;
// patterns are regular expressions (RE2, close to XML Schema's).
var feelGo = map[string]string{
	"substring":        "_feelSubstring",
	"substring before": "_feelBefore",
	"substring after":  "_feelAfter",
	"replace":          "_feelReplace",
	"matches":          "_feelMatches",
	"split":            "_feelSplit",
	"trim":             "_feelTrim",
	"append":           "_feelAppend",
	"concatenate":      "_feelConcatenate",
	"sum":              "_feelSum",
	"min":              "_feelMin",
	"max":              "_feelMax",
	"mean":             "_feelMean",
	"distinct values":  "_feelDistinct",
	"flatten":          "_feelFlatten",
	"reverse":          "_feelReverse",
	"index of":         "_feelIndexOf",
	"get value":        "_feelGetValue",
}

// feelGoArity is how many arguments each takes (hi -1: any number).
var feelGoArity = map[string][2]int{
	"substring": {2, 3}, "substring before": {2, 2}, "substring after": {2, 2},
	"replace": {3, 4}, "matches": {2, 3}, "split": {2, 2}, "trim": {1, 1},
	"append": {1, -1}, "concatenate": {0, -1}, "sum": {1, -1}, "min": {1, -1}, "max": {1, -1}, "mean": {1, -1},
	"distinct values": {1, 1}, "flatten": {1, 1}, "reverse": {1, 1}, "index of": {2, 2}, "get value": {2, 2},
}

// maxArgs bounds the arguments of a function that takes any number.
const maxArgs = 1000

// maxPattern bounds a pattern's length; RE2 runs in linear time.
const maxPattern = 1000

var feelFunctions = []expr.Option{
	fn("_feelSubstring", func(a []any) any {
		s, ok := a[0].(string)
		start, ok2 := whole(a[1])
		if !ok || !ok2 {
			return nil
		}
		r := []rune(s)
		i := start - 1
		if start < 0 {
			i = len(r) + start
		}
		if i < 0 || i > len(r) {
			return nil
		}
		end := len(r)
		if len(a) == 3 {
			n, ok := whole(a[2])
			if !ok || n < 0 {
				return nil
			}
			end = min(i+n, len(r))
		}
		return string(r[i:end])
	}),
	fn("_feelBefore", func(a []any) any {
		s, ok := a[0].(string)
		m, ok2 := a[1].(string)
		if !ok || !ok2 {
			return nil
		}
		before, _, _ := strings.Cut(s, m)
		if !strings.Contains(s, m) {
			return ""
		}
		return before
	}),
	fn("_feelAfter", func(a []any) any {
		s, ok := a[0].(string)
		m, ok2 := a[1].(string)
		if !ok || !ok2 {
			return nil
		}
		_, after, found := strings.Cut(s, m)
		if !found {
			return ""
		}
		return after
	}),
	fn("_feelReplace", func(a []any) any {
		s, ok := a[0].(string)
		repl, ok2 := a[2].(string)
		re := pattern(a[1], a[3:])
		if !ok || !ok2 || re == nil {
			return nil
		}
		return re.ReplaceAllString(s, repl)
	}),
	fn("_feelMatches", func(a []any) any {
		s, ok := a[0].(string)
		re := pattern(a[1], a[2:])
		if !ok || re == nil {
			return nil
		}
		return re.MatchString(s)
	}),
	fn("_feelSplit", func(a []any) any {
		s, ok := a[0].(string)
		re := pattern(a[1], nil)
		if !ok || re == nil {
			return nil
		}
		return anys(re.Split(s, -1))
	}),
	fn("_feelTrim", func(a []any) any {
		if s, ok := a[0].(string); ok {
			return strings.TrimSpace(s)
		}
		return nil
	}),
	fn("_feelAppend", func(a []any) any {
		l, ok := list(a[0])
		if !ok {
			return nil
		}
		return append(append([]any{}, l...), a[1:]...)
	}),
	fn("_feelConcatenate", func(a []any) any {
		out := []any{}
		for _, x := range a {
			l, ok := list(x)
			if !ok {
				return nil
			}
			out = append(out, l...)
		}
		return out
	}),
	fn("_feelSum", func(a []any) any { return fold(a, func(acc, x float64) float64 { return acc + x }, false) }),
	fn("_feelMin", func(a []any) any { return fold(a, math.Min, true) }),
	fn("_feelMax", func(a []any) any { return fold(a, math.Max, true) }),
	fn("_feelMean", func(a []any) any {
		items := spread(a)
		sum := fold(a, func(acc, x float64) float64 { return acc + x }, true)
		if sum == nil || len(items) == 0 {
			return nil
		}
		return sum.(float64) / float64(len(items))
	}),
	fn("_feelDistinct", func(a []any) any {
		l, ok := list(a[0])
		if !ok {
			return nil
		}
		out := []any{}
		for _, x := range l {
			if !containsValue(out, x) {
				out = append(out, x)
			}
		}
		return out
	}),
	fn("_feelFlatten", func(a []any) any {
		l, ok := list(a[0])
		if !ok {
			return nil
		}
		return flatten(l, nil)
	}),
	fn("_feelReverse", func(a []any) any {
		l, ok := list(a[0])
		if !ok {
			return nil
		}
		out := make([]any, len(l))
		for i, x := range l {
			out[len(l)-1-i] = x
		}
		return out
	}),
	fn("_feelIndexOf", func(a []any) any {
		l, ok := list(a[0])
		if !ok {
			return nil
		}
		out := []any{}
		for i, x := range l {
			if feelEqual(x, a[1]) {
				out = append(out, i+1)
			}
		}
		return out
	}),
	fn("_feelGetValue", func(a []any) any {
		m, ok := a[0].(map[string]any)
		k, ok2 := a[1].(string)
		if !ok || !ok2 {
			return nil
		}
		return m[k]
	}),
}

// fn registers a FEEL function with expr-lang. A call with fewer
// arguments than it takes (only an expr-lang expression can make one) is
// an error, not a panic.
func fn(name string, f func([]any) any) expr.Option {
	lo := 0
	for feel, goName := range feelGo {
		if goName == name {
			lo = feelGoArity[feel][0]
		}
	}
	return expr.Function(name, func(params ...any) (any, error) {
		if len(params) < lo {
			return nil, fmt.Errorf("%s takes at least %d arguments", name, lo)
		}
		return f(params), nil
	})
}

// whole reads an integer-valued number.
func whole(v any) (int, bool) {
	f, ok := Number(v)
	if !ok || f != math.Trunc(f) || math.Abs(f) > 1<<31 {
		return 0, false
	}
	return int(f), true
}

// Number reads a number of any of the types a JSON-like value or an
// expression's result holds (float64, int, int64, int32, float32,
// json.Number).
func Number(v any) (float64, bool) {
	switch n := v.(type) {
	case int:
		return float64(n), true
	case int64:
		return float64(n), true
	case float64:
		return n, true
	case int32:
		return float64(n), true
	case float32:
		return float64(n), true
	case json.Number:
		f, err := n.Float64()
		return f, err == nil
	}
	return 0, false
}

// pattern compiles a FEEL regular expression with its flags (i, s, m,
// x is refused); nil when it is not one.
func pattern(p any, flags []any) *regexp.Regexp {
	s, ok := p.(string)
	if !ok || len(s) > maxPattern || !utf8.ValidString(s) {
		return nil
	}
	prefix := ""
	if len(flags) > 0 {
		f, ok := flags[0].(string)
		if !ok || strings.Trim(f, "ism") != "" {
			return nil
		}
		if f != "" {
			prefix = "(?" + f + ")"
		}
	}
	re, err := regexp.Compile(prefix + s)
	if err != nil {
		return nil
	}
	return re
}

func anys(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// list reads a list of any element type.
func list(v any) ([]any, bool) {
	if l, ok := v.([]any); ok {
		return l, true
	}
	rv := reflect.ValueOf(v)
	if !rv.IsValid() || rv.Kind() != reflect.Slice {
		return nil, false
	}
	out := make([]any, rv.Len())
	for i := range out {
		out[i] = rv.Index(i).Interface()
	}
	return out, true
}

// spread is a function's numbers: one list argument, or the arguments.
func spread(a []any) []any {
	if len(a) == 1 {
		if l, ok := list(a[0]); ok {
			return l
		}
	}
	return a
}

// fold combines the numbers of a; null when one is not a number, or
// (with needOne) there are none.
func fold(a []any, f func(acc, x float64) float64, needOne bool) any {
	items := spread(a)
	if len(items) == 0 {
		if needOne {
			return nil
		}
		return 0.0
	}
	var acc float64
	for i, x := range items {
		n, ok := Number(x)
		if !ok {
			return nil
		}
		if i == 0 && needOne {
			acc = n
			continue
		}
		acc = f(acc, n)
	}
	return acc
}

func flatten(l []any, out []any) []any {
	if out == nil {
		out = []any{}
	}
	for _, x := range l {
		if inner, ok := list(x); ok {
			out = flatten(inner, out)
			continue
		}
		out = append(out, x)
	}
	return out
}

func containsValue(l []any, v any) bool {
	for _, x := range l {
		if feelEqual(x, v) {
			return true
		}
	}
	return false
}

// feelEqual compares as FEEL does: numbers by value, the rest deeply.
func feelEqual(a, b any) bool {
	if x, ok := Number(a); ok {
		y, ok := Number(b)
		return ok && x == y
	}
	return reflect.DeepEqual(a, b) || fmt.Sprint(a) == fmt.Sprint(b) && reflect.TypeOf(a) == reflect.TypeOf(b)
}
