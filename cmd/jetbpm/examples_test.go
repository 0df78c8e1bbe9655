package main

import (
	"context"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jetbpm/jetbpm/engine/bpmnxml"
	"github.com/jetbpm/jetbpm/jobs"
)

// TestExampleSagaImports: the saga's two handlers are found.
func TestExampleSagaImports(t *testing.T) {
	procs, err := bpmnxml.ParseFile("../../examples/saga.bpmn")
	if err != nil {
		t.Fatal(err)
	}
	for activity, handler := range map[string]string{"book": "unbook", "charge": "refund"} {
		if h := procs[0].CompensationHandler(activity); h == nil || h.ID != handler || !h.IsExternal() || h.Service.Worker.Topic != "undo" {
			t.Errorf("handler of %s = %+v, want %s on topic undo", activity, h, handler)
		}
	}
}

// TestExamplePaymentImports: the make run demo's process imports with the
// options the demo's story relies on.
func TestExamplePaymentImports(t *testing.T) {
	procs, err := bpmnxml.ParseFile("../../examples/payment.bpmn")
	if err != nil {
		t.Fatal(err)
	}
	n := procs[0].Node("charge")
	if n == nil || !n.IsExternal() {
		t.Fatalf("charge is not an external task: %+v", n)
	}
	o := n.Service.Worker.Overrides()
	if n.Service.Worker.Topic != "charge" || o.Trust != jobs.EngineAuthoritative || o.Retry == nil || o.Retry.MaxAttempts != 2 {
		t.Fatalf("worker options %+v", o)
	}
}

// TestDemoStory runs make run's story (examples/demo.sh) end to end with
// the binary under test, on ports of its own, and checks that every step
// got where the story says.
func TestDemoStory(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", "../../examples/demo.sh")
	cmd.Env = append(os.Environ(), "JETBPM_BIN="+jetbpmBin, "JETBPM_DATA="+t.TempDir(),
		"JETBPM_LISTEN="+freeAddr(t), "JETBPM_HTTP="+freeAddr(t), "JETBPM_GRPC="+freeAddr(t), "JETBPM_DEMO_ONCE=1", "NO_COLOR=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("demo.sh: %v\n%s", err, out)
	}
	story := string(out)
	for _, want := range []string{
		"payment 1", "refund 1", // deployed
		"incident resolve",                // the operator's step
		"claimed by alice", "completed\n", // the task list's step
		`"approved": true`, `"condition": "as new"`, // the refund's variables: the task's result and the message's
		"saga 1", `"refundDone": true`, `"unbookDone": true`, // the saga's handlers ran
		"incident abandon", "compensating\n", "status:  terminated", // the operator's abandon, then compensate
		"deployed shipping version 1", `"shippingLabel":"LBL-o-42"`, // the Zeebe client's program
	} {
		if !strings.Contains(story, want) {
			t.Errorf("the demo's output lacks %q:\n%s", want, story)
		}
	}
	if n := len(regexp.MustCompile(`status:\s+completed`).FindAllString(story, -1)); n != 4 {
		t.Errorf("%d instances shown completed, want the small payment, the resolved one, the refund and the undone saga:\n%s", n, story)
	}
	if n := strings.Count(story, `"refundDone": true`); n != 2 {
		t.Errorf("%d sagas show their refund undone, want both (the modelled undo and the operator's):\n%s", n, story)
	}
}
