package script_test

import (
	"context"
	"testing"
	"time"

	"github.com/jetbpm/jetbpm/script"
)

// FuzzCompileAndRun: any text either fails to compile with an error or
// runs to a result or an error within its limits; nothing panics.
func FuzzCompileAndRun(f *testing.F) {
	for _, s := range []string{
		`execution.setVariable("a", 1); a + 1`,
		`S('{"a": [1, 2]}').prop("a").elements()[1].numberValue()`,
		`var x = {}; x.x = x; execution.setVariable("cycle", x)`,
		`function f() { return f(); } f()`,
		`[1, 2, 3].map(function (n) { return n * amount; })`,
		`new Date(0)`, `/(a+)+$/.test("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!")`, `0/0`, `1e400`,
		`throw new Error("x")`, `S("not json")`, "`${amount}`",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		p, err := script.Compile("fuzz", src)
		if err != nil {
			return
		}
		_, _ = p.Run(context.Background(), script.Env{Vars: map[string]any{"amount": int64(3), "s": "x"}},
			script.Limits{Timeout: 50 * time.Millisecond, Memory: 16 << 20, StackDepth: 200})
	})
}
