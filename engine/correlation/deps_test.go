package correlation_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestImportsNoNATS keeps the correlation logic free of NATS: it is tested
// without a server, and the engine stores and publishes for it.
func TestImportsNoNATS(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	for _, pkg := range strings.Fields(string(out)) {
		if strings.HasPrefix(pkg, "github.com/nats-io/") || strings.HasPrefix(pkg, "github.com/jetbpm/jetbpm/streams") {
			t.Fatalf("package correlation depends on %s", pkg)
		}
	}
}
