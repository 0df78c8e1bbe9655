package httpauth_test

import (
	"strings"
	"testing"

	"github.com/jetbpm/jetbpm/internal/httpauth"
)

// FuzzParse: any auth file is accepted or refused with an error naming
// the file; nothing panics.
func FuzzParse(f *testing.F) {
	f.Add("users:\n  - {name: a, bcrypt: \"$2a$04$abcdefghijklmnopqrstuu7tBXKB3XyS5uVb1mD9p4cGl6r6c5YhW\", roles: [operator]}\n")
	f.Add("tokens:\n  - {name: w, sha256: " + httpauth.HashToken("x") + ", roles: [worker], topics: ['*']}\n")
	f.Add("tokens: {a: 1}\n")
	f.Add("users:\n  - name: [1]\n")
	f.Fuzz(func(t *testing.T, file string) {
		a, err := httpauth.Parse("f.yaml", []byte(file))
		if err != nil && !strings.HasPrefix(err.Error(), "http auth f.yaml: ") {
			t.Fatalf("an error not naming the file: %v", err)
		}
		if err == nil && a == nil {
			t.Fatal("no Authenticator and no error")
		}
	})
}
