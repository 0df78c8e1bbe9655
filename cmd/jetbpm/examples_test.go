package main

import (
	"testing"

	"github.com/jetbpm/jetbpm/engine/bpmnxml"
	"github.com/jetbpm/jetbpm/jobs"
)

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
