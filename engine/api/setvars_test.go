package api_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/jetbpm/jetbpm/engine"
	"github.com/jetbpm/jetbpm/engine/api"
)

// instance.setVariables writes to a parked instance and answers with its
// view after the write; a retried request id applies once; requests that
// cannot apply are refused with their sentinel.
func TestInstanceSetVariables(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := ctxT(t)
	f.deploy(t, api.File{Name: "wait.bpmn", XML: waitXML})
	id := f.start(t, api.StartRequest{ProcessID: "wait", Vars: json.RawMessage(`{"n":1}`)})
	f.waitParked(t, id)

	for _, bad := range []string{`[1]`, `"x"`, `null`, `{}`} {
		if _, err := f.client.SetVariables(ctx, id, json.RawMessage(bad), ""); !errors.Is(err, engine.ErrInvalid) {
			t.Errorf("vars %s: %v, want ErrInvalid", bad, err)
		}
	}
	v, err := f.client.SetVariables(ctx, id, json.RawMessage(`{"n":2,"s":"x"}`), "req-1")
	if err != nil || v.Variables["n"] != float64(2) || v.Variables["s"] != "x" {
		t.Fatalf("set: %+v, %v", v, err)
	}
	if v, err = f.client.SetVariables(ctx, id, json.RawMessage(`{"n":3}`), "req-1"); err != nil || v.Variables["n"] != float64(2) {
		t.Fatalf("retry of req-1: %+v, %v; want n still 2", v, err)
	}
	if _, err := f.client.SetVariables(ctx, "nope", json.RawMessage(`{"n":3}`), ""); !errors.Is(err, engine.ErrNotFound) {
		t.Fatalf("unknown instance: %v, want ErrNotFound", err)
	}
	if _, err := f.client.Cancel(ctx, id, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := f.client.SetVariables(ctx, id, json.RawMessage(`{"n":3}`), ""); !errors.Is(err, engine.ErrFinished) {
		t.Fatalf("finished instance: %v, want ErrFinished", err)
	}
}
