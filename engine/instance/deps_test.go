package instance_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestPureLogicImportsNoNATS keeps the model, the step, jobs, incidents,
// expressions and scripts free of NATS: they are data and logic, tested without a server.
func TestPureLogicImportsNoNATS(t *testing.T) {
	pkgs := []string{".", "../model", "../bpmnxml", "../form", "../../jobs", "../../incidents", "../../expression", "../../script", "../lost", "../ownership"}
	out, err := exec.Command("go", append([]string{"list", "-deps"}, pkgs...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	for _, pkg := range strings.Fields(string(out)) {
		if strings.HasPrefix(pkg, "github.com/nats-io/") || strings.HasPrefix(pkg, "github.com/jetbpm/jetbpm/streams") {
			t.Fatalf("a pure-logic package depends on %s", pkg)
		}
	}
}
