package engine_test

import (
	"errors"
	"math"
	"slices"
	"testing"

	"github.com/jetbpm/jetbpm/engine"
	"github.com/jetbpm/jetbpm/engine/instance"
	"github.com/jetbpm/jetbpm/engine/model"
	"github.com/jetbpm/jetbpm/streams/streamstest"
)

// TestSetVariables modifies a parked instance's variables: the write is a
// variable event its conditional catch sees, so it moves on in the same
// step; a retried request applies once; bad requests change nothing.
func TestSetVariables(t *testing.T) {
	t.Parallel()
	env := streamstest.Start(t)
	eng := openEngine(t, env, nil)
	b := model.NewBuilder("setvars").StartEvent("start").ConditionalCatchEvent("wait", "${go == true}").
		UserTask("after").EndEvent("end").Sequence("start", "wait", "after", "end")
	deployTasks(t, eng, build(t, b))
	startTask(t, eng, "setvars", "sv-1", map[string]any{"go": false, "n": 1})
	waitFor(t, eng, "sv-1", "the catch to wait", func(v *engine.InstanceView) bool { return slices.Contains(v.ActiveNodes, "wait") })

	for name, vars := range map[string]map[string]any{
		"empty":      {},
		"no name":    {"": 1},
		"NaN":        {"go": math.NaN()},
		"unstorable": {"go": make(chan int)},
	} {
		if _, err := eng.SetVariables(bounded(t), "sv-1", vars); !errors.Is(err, engine.ErrInvalid) {
			t.Errorf("%s: got %v, want ErrInvalid", name, err)
		}
	}
	if _, err := eng.SetVariables(bounded(t), "sv-1", map[string]any{"go": true}, engine.RequestID("a b")); !errors.Is(err, engine.ErrInvalid) {
		t.Errorf("bad request id: got %v, want ErrInvalid", err)
	}
	if v, err := eng.Instance(bounded(t), "sv-1"); err != nil || v.Variables["go"] != false || !slices.Contains(v.ActiveNodes, "wait") {
		t.Fatalf("a refused request changed the instance: %+v %v", v, err)
	}

	v, err := eng.SetVariables(bounded(t), "sv-1", map[string]any{"go": true, "n": 5, "note": map[string]any{"by": "ops"}}, engine.RequestID("r-1"))
	if err != nil {
		t.Fatal(err)
	}
	if v.Variables["go"] != true || v.Variables["n"] != int64(5) || !slices.Contains(v.ActiveNodes, "after") {
		t.Fatalf("after the write: %v at %v", v.Variables, v.ActiveNodes)
	}
	// The same request id again is a retry: it applies nothing, even
	// with other values.
	v, err = eng.SetVariables(bounded(t), "sv-1", map[string]any{"n": 99}, engine.RequestID("r-1"))
	if err != nil || v.Variables["n"] != int64(5) {
		t.Fatalf("retry: %v, %v", v, err)
	}
	// A new request updates a variable.
	if v, err = eng.SetVariables(bounded(t), "sv-1", map[string]any{"n": 6}); err != nil || v.Variables["n"] != int64(6) {
		t.Fatalf("second request: %v, %v", v, err)
	}

	if _, err := eng.CompleteTask(bounded(t), taskAt(t, eng, "sv-1", "after"), "ann", nil); err != nil {
		t.Fatal(err)
	}
	if v := waitDone(t, eng, "sv-1"); v.Status != instance.Completed || v.Variables["n"] != int64(6) {
		t.Fatalf("sv-1: %s %v", v.Status, v.Variables)
	}
	if _, err := eng.SetVariables(bounded(t), "sv-1", map[string]any{"n": 7}); !errors.Is(err, engine.ErrFinished) {
		t.Errorf("finished: got %v, want ErrFinished", err)
	}
	if _, err := eng.SetVariables(bounded(t), "nope", map[string]any{"n": 7}); !errors.Is(err, engine.ErrNotFound) {
		t.Errorf("unknown: got %v, want ErrNotFound", err)
	}
}
