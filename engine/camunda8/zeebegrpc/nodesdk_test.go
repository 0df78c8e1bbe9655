package zeebegrpc_test

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/jetbpm/jetbpm/engine"
	"github.com/jetbpm/jetbpm/engine/instance"
	"github.com/jetbpm/jetbpm/internal/nodetest"
)

// TestCamunda8NodeSDK runs the real @camunda8/sdk 8.8.13 (its gRPC
// ZeebeGrpcClient; testdata/sdk, installed by `make jsclient`) against the
// gateway: deploy, a job worker that completes, fails with a retry, throws
// a BPMN error and fails with none left, instances with result, and a
// published message.
func TestCamunda8NodeSDK(t *testing.T) {
	f := setup(t)
	models, _ := filepath.Abs(filepath.Join("..", "testdata"))
	payment, orders := filepath.Join(models, "payment.bpmn"), filepath.Join(models, "orders.bpmn")
	var summary struct {
		Deployed  []string
		Results   map[string]map[string]any
		Instances map[string]string
		Seen      map[string][]struct {
			Retries int
			Headers map[string]string
			Worker  string
		}
		Errors []string
	}
	nodetest.Run(t, "testdata/sdk", "@camunda8/sdk", &summary, "run.mjs", f.addr, payment, orders)
	ctx := ctxT(t)
	if strings.Join(summary.Deployed, ",") != "hold,order,payment,quick" {
		t.Errorf("deployed %v", summary.Deployed)
	}
	if r := summary.Results["1"]; r["receipt"] != 10.0 || r["result"] != nil {
		t.Errorf("amount 1 ended with %v, want receipt 10 (the output mapping) and no result", r)
	}
	if r := summary.Results["2"]; r["receipt"] != "second try" {
		t.Errorf("amount 2 ended with %v, want receipt from the second try", r)
	}
	if s := summary.Seen["2"]; len(s) != 2 || s[0].Retries != 3 || s[1].Retries != 2 {
		t.Errorf("amount 2's activations %+v, want retries 3 then 2", s)
	}
	if r := summary.Results["3"]; r["why"] != "funds" || r["receipt"] != nil {
		t.Errorf("amount 3 ended with %v, want the error's variables and no receipt", r)
	}
	if s := summary.Seen["1"]; len(s) != 1 || s[0].Headers["bank"] != "acme" || s[0].Worker != "node-1" {
		t.Errorf("amount 1's activation %+v", s)
	}
	v, err := f.eng.Instance(ctx, summary.Instances["3"])
	if err != nil || v.Status != instance.Completed || !slices.Contains(v.Passed, "declined") {
		t.Errorf("amount 3: %+v %v, want it ended at declined", v, err)
	}
	if v, err := f.eng.WaitUntil(ctx, summary.Instances["4"], func(v *engine.InstanceView) bool { return len(v.Incidents) > 0 }); err != nil ||
		!strings.Contains(v.Incidents[0].Cause, "bank gone") {
		t.Errorf("amount 4: %+v %v, want an incident", v, err)
	}
	if v, err := f.eng.Wait(ctx, summary.Instances["order"]); err != nil || v.Status != instance.Completed || v.Variables["paidBy"] != "node" {
		t.Errorf("the order the message released: %+v %v", v, err)
	}
}
