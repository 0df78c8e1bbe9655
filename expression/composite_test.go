package expression

import (
	"strings"
	"testing"
)

func TestComposite(t *testing.T) {
	vars := map[string]any{"id": int64(7), "first": "Ann", "last": nil, "x": 1.5, "a": true, "b": "q", "n": int64(2)}
	for _, tc := range []struct {
		src  string
		want string
	}{
		{"user-${id}", "user-7"},
		{"${first} ${last}", "Ann "}, // null is ""
		{"a}${x}b", "a}1.5b"},
		{"${a}${b}", "trueq"},
		{"n: #{n + 1}!", "n: 3!"},
		{"${'}'}-x", "}-x"}, // a brace in a string does not close
		{"it's ${first}", "it's Ann"},
	} {
		if !IsComposite(tc.src) {
			t.Errorf("IsComposite(%q) = false", tc.src)
		}
		out, err := TranslateComposite(tc.src)
		if err != nil {
			t.Fatalf("%q: %v", tc.src, err)
		}
		v, err := MustCompile(out).Eval(vars)
		if err != nil || v != tc.want {
			t.Errorf("%q → %s = %#v, %v; want %q", tc.src, out, v, err, tc.want)
		}
	}
	for _, src := range []string{"${a}", "plain", "#{a ? 'x}' : b}", "=x"} {
		if IsComposite(src) {
			t.Errorf("IsComposite(%q) = true", src)
		}
	}
	for _, tc := range []struct{ src, msg string }{
		{"user-${id", `missing closing "}"`},
		{"a ${x +} b", "missing operand"},
		{"x ${f(1)}", "function"},
	} {
		_, err := TranslateComposite(tc.src)
		if err == nil || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%q: %v, want an error with %q", tc.src, err, tc.msg)
		}
	}
}

// TranslateComposite never panics, and what it translates compiles unless
// one of its ${...} does not compile on its own (a type error, say).
func FuzzComposite(f *testing.F) {
	for _, s := range []string{"user-${id}", "${a}${b}", "x ${'}'} y", "${", "#{a.b[0]}-", "${a ? 'x' : \"y\"}!"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		out, err := TranslateComposite(src)
		if err != nil {
			return
		}
		if _, err := Compile(out); err != nil {
			for rest := src; ; {
				i := strings.IndexAny(rest, "$#")
				if i < 0 {
					break
				}
				if end, ok := juelEnd(rest, i); ok && i+1 < len(rest) && rest[i+1] == '{' {
					if _, err := Compile(rest[i:end]); err != nil {
						return // the segment's own error
					}
					rest = rest[end:]
					continue
				}
				rest = rest[i+1:]
			}
			t.Fatalf("%q translated to %q, which does not compile: %v", src, out, err)
		}
	})
}
