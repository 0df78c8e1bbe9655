package engine_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jetbpm/jetbpm/engine"
	"github.com/jetbpm/jetbpm/engine/instance"
	"github.com/jetbpm/jetbpm/engine/model"
	"github.com/jetbpm/jetbpm/streams/streamstest"
)

// callSetup deploys a child process "child" (script doubling n, an
// in-process op "check" that fails while broken is set, or an error end
// when reject is true) and a caller "parent" whose call activity "call" has
// an error boundary for REJECTED and a one-hour timer boundary.
func callSetup(t *testing.T) (*engine.Engine, *atomic.Bool) {
	t.Helper()
	env := streamstest.Start(t)
	var broken atomic.Bool
	ops := &engine.Operations{}
	ops.Register("check", func(context.Context, map[string]any) (map[string]any, error) {
		if broken.Load() {
			return nil, errors.New("checker is down")
		}
		return map[string]any{"checked": true}, nil
	})
	eng := openEngine(t, env, ops)
	ctx := context.Background()
	child := build(t, model.NewBuilder("child").StartEvent("s").
		ScriptTask("double", "n * 2", "doubled").
		ServiceTask("check", "check").
		ExclusiveGateway("ok?").
		EndEvent("done").ErrorEndEvent("reject", "REJECTED").
		Sequence("s", "double", "check", "ok?").
		Flow("ok?", "reject", model.When("reject == true")).
		DefaultFlow("ok?", "done"))
	parent := build(t, model.NewBuilder("parent").StartEvent("s").
		CallActivity("call", "child", model.Input("n", "amount"), model.Input("reject", "reject"),
			model.Output("result", "doubled")).
		EndEvent("e").
		ErrorBoundary("rejected", "call", "REJECTED").ScriptTask("mark", `"rejected"`, "result").EndEvent("e2").
		TimerBoundary("slow", "call", model.Duration("PT1H"), true).EndEvent("e3").
		Sequence("s", "call", "e").Sequence("rejected", "mark", "e2").Sequence("slow", "e3"))
	for _, p := range []*model.Process{child, parent} {
		if _, err := eng.Deploy(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	return eng, &broken
}

func TestCallActivity(t *testing.T) {
	t.Parallel()
	eng, broken := callSetup(t)
	ctx := context.Background()

	t.Run("completes with the child's output", func(t *testing.T) {
		id, _ := eng.Start(ctx, "parent", map[string]any{"amount": 21, "reject": false})
		v := waitDone(t, eng, id)
		if v.Status != instance.Completed || v.Variables["result"] != int64(42) {
			t.Fatalf("%+v", v)
		}
		if _, ok := v.Variables["doubled"]; ok {
			t.Error("an unmapped child variable leaked into the caller despite output mappings")
		}
	})

	t.Run("a BPMN error in the child is caught at the call activity", func(t *testing.T) {
		id, _ := eng.Start(ctx, "parent", map[string]any{"amount": 1, "reject": true})
		if v := waitDone(t, eng, id); v.Status != instance.Completed || v.Variables["result"] != "rejected" {
			t.Fatalf("%+v", v)
		}
	})

	t.Run("a technical failure in the child is one incident on the caller; retry restarts the child", func(t *testing.T) {
		broken.Store(true)
		id, _ := eng.Start(ctx, "parent", map[string]any{"amount": 5, "reject": false})
		_, inc := waitIncident(t, eng, id)
		if inc.Node != "call" || inc.CauseClass != "childFailed" || !strings.Contains(inc.Cause, "checker is down") {
			t.Fatalf("%+v", inc)
		}
		firstChild := id + "_c" + strings.TrimPrefix(inc.ID, id+"/call/")
		if cv, err := eng.Instance(ctx, firstChild); err != nil || cv.Status != instance.Failed || len(cv.Incidents) != 0 {
			t.Fatalf("the child %s should have failed without an incident of its own: %+v %v", firstChild, cv, err)
		}
		broken.Store(false)
		if err := eng.RetryIncident(ctx, inc.ID); err != nil {
			t.Fatal(err)
		}
		if v := waitDone(t, eng, id); v.Status != instance.Completed || v.Variables["result"] != int64(10) {
			t.Fatalf("%+v", v)
		}
	})

	t.Run("cancelling the caller cancels the child", func(t *testing.T) {
		eng2, _ := callSetup(t)
		ctx := context.Background()
		// A child waiting on a timer keeps the call open.
		waiter := build(t, model.NewBuilder("waiter").StartEvent("s").
			TimerCatchEvent("w", model.Duration("PT1H")).EndEvent("e").Sequence("s", "w", "e"))
		caller := build(t, model.NewBuilder("caller").StartEvent("s").
			CallActivity("call", "waiter").EndEvent("e").Sequence("s", "call", "e"))
		for _, p := range []*model.Process{waiter, caller} {
			if _, err := eng2.Deploy(ctx, p); err != nil {
				t.Fatal(err)
			}
		}
		id, _ := eng2.Start(ctx, "caller", nil)
		wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		v, err := eng2.WaitUntil(wctx, id, func(v *engine.InstanceView) bool { return len(v.CalledInstances) == 1 })
		if err != nil {
			t.Fatal(err)
		}
		child := v.CalledInstances[0]
		cv, err := eng2.WaitUntil(wctx, child, func(v *engine.InstanceView) bool { return len(v.ActiveNodes) == 1 })
		if err != nil {
			t.Fatal(err)
		}
		if cv.ParentInstance != id {
			t.Fatalf("child's parentInstance %q, want %q", cv.ParentInstance, id)
		}
		if err := eng2.Cancel(wctx, id, "test"); err != nil {
			t.Fatal(err)
		}
		if cv := waitDone(t, eng2, child); cv.Status != instance.Terminated {
			t.Fatalf("child %+v", cv)
		}
	})
}

func TestCallActivityOfMissingProcess(t *testing.T) {
	t.Parallel()
	env := streamstest.Start(t)
	eng := openEngine(t, env, nil)
	ctx := context.Background()
	p := build(t, model.NewBuilder("orphan").StartEvent("s").CallActivity("call", "nowhere").EndEvent("e").Sequence("s", "call", "e"))
	if _, err := eng.Deploy(ctx, p); err != nil {
		t.Fatal(err)
	}
	id, _ := eng.Start(ctx, "orphan", nil)
	if _, inc := waitIncident(t, eng, id); inc.CauseClass != "childFailed" || !strings.Contains(inc.Cause, "nowhere") {
		t.Fatalf("%+v", inc)
	}
}

// The call-activity conformance file calls start-end: with both deployed,
// the caller completes.
func TestCallActivityConformanceFile(t *testing.T) {
	t.Parallel()
	env := streamstest.Start(t)
	eng := openEngine(t, env, nil)
	ctx := context.Background()
	for _, f := range []string{"zeebe-process-test/start-end.bpmn", "zeebe-process-test/call-activity.bpmn"} {
		if _, err := eng.DeployFile(ctx, corpus+f); err != nil {
			t.Fatal(err)
		}
	}
	id, err := eng.Start(ctx, "call-activity", map[string]any{"x": 1})
	if err != nil {
		t.Fatal(err)
	}
	if v := waitDone(t, eng, id); v.Status != instance.Completed || v.Variables["x"] != int64(1) {
		t.Fatalf("%+v", v)
	}
}

// A child waiting on a timer across an engine restart completes and
// reports to its caller, which then completes.
func TestCallActivityAcrossRestart(t *testing.T) {
	t.Parallel()
	env := streamstest.Start(t, streamstest.WithFastFailover(time.Second))
	ctx := context.Background()
	eng := openEngine(t, env, nil)
	child := build(t, model.NewBuilder("napper").StartEvent("s").
		TimerCatchEvent("nap", model.Duration("PT1S")).ScriptTask("up", "true", "rested").EndEvent("e").
		Sequence("s", "nap", "up", "e"))
	parent := build(t, model.NewBuilder("caller").StartEvent("s").
		CallActivity("call", "napper").EndEvent("e").Sequence("s", "call", "e"))
	for _, p := range []*model.Process{child, parent} {
		if _, err := eng.Deploy(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	id, _ := eng.Start(ctx, "caller", nil)
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := eng.WaitUntil(wctx, id, func(v *engine.InstanceView) bool { return len(v.ActiveNodes) == 1 }); err != nil {
		t.Fatal(err)
	}
	if err := eng.Close(ctx); err != nil {
		t.Fatal(err)
	}
	env.Restart(t)
	eng = openEngine(t, env, nil)
	if v := waitDone(t, eng, id); v.Status != instance.Completed || v.Variables["rested"] != true {
		t.Fatalf("%+v", v)
	}
}
