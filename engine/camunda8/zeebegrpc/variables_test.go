package zeebegrpc

import (
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Any document decodes to a JSON object or an INVALID_ARGUMENT, never a
// panic.
func FuzzVariables(f *testing.F) {
	for _, s := range []string{``, `{}`, `{"a": 1}`, `[1]`, `{"a": 1} {}`, `null`, `{"a": {"b": [1, "x", null]}}`, `{"n": 12345678901234567890}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, doc string) {
		vars, err := variables("variables", doc)
		if err != nil {
			if s, _ := status.FromError(err); s.Code() != codes.InvalidArgument {
				t.Fatalf("%q: %v, want INVALID_ARGUMENT", doc, err)
			}
			return
		}
		if vars == nil && strings.TrimSpace(doc) != "" {
			t.Fatalf("%q decoded to no variables", doc)
		}
	})
}
