package workerkit_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestDoesNotLinkTheServer keeps worker binaries small: workerkit may use
// package streams' names, never the embedded nats-server.
func TestDoesNotLinkTheServer(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	for _, pkg := range strings.Fields(string(out)) {
		if strings.HasPrefix(pkg, "github.com/nats-io/nats-server/") {
			t.Fatalf("workerkit links %s", pkg)
		}
	}
}
