package engine_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jetbpm/jetbpm/engine"
	"github.com/jetbpm/jetbpm/engine/enginetest"
	"github.com/jetbpm/jetbpm/engine/instance"
	"github.com/jetbpm/jetbpm/engine/model"
	"github.com/jetbpm/jetbpm/streams/streamstest"
)

// quietLog keeps test output to warnings and errors.
var quietLog = enginetest.QuietLog

// openEngine starts an engine on env and closes it at cleanup. It syncs
// the store as serve does at durability sync, so the tests go through the
// syncs.
func openEngine(t testing.TB, env *streamstest.Env, ops *engine.Operations) *engine.Engine {
	t.Helper()
	return enginetest.Open(t, env.Conn, withSync(env, engine.Options{Operations: ops}))
}

// withSync sets opts.Sync to env's embedded server, if it has one.
func withSync(env *streamstest.Env, opts engine.Options) engine.Options {
	if opts.Sync == nil && env.Server != nil {
		opts.Sync = env.Server
	}
	return opts
}

func build(t testing.TB, b *model.Builder) *model.Process {
	t.Helper()
	p, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func waitDone(t testing.TB, eng *engine.Engine, id string) *engine.InstanceView {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	v, err := eng.Wait(ctx, id)
	if err != nil {
		t.Fatalf("instance %s did not finish: %v", id, err)
	}
	return v
}

func TestStartRunsToCompletion(t *testing.T) {
	t.Parallel()
	env := streamstest.Start(t)
	ops := &engine.Operations{}
	ops.Register("double", func(ctx context.Context, in map[string]any) (map[string]any, error) {
		return map[string]any{"amount": in["amount"].(int64) * 2}, nil
	})
	eng := openEngine(t, env, ops)
	ctx := context.Background()
	b := model.NewBuilder("doubler").
		StartEvent("start").
		ServiceTask("double", "double").
		ExclusiveGateway("big").
		ScriptTask("mark", `"big"`, "size").
		EndEvent("end").
		Sequence("start", "double", "big").
		Flow("big", "mark", model.When("amount > 100")).
		DefaultFlow("big", "end").
		Flow("mark", "end")
	dep, err := eng.Deploy(ctx, build(t, b))
	if err != nil || dep.Version != 1 || !dep.New {
		t.Fatalf("deploy = %+v, %v", dep, err)
	}
	again, err := eng.Deploy(ctx, build(t, b))
	if err != nil || again.Version != 1 || again.New {
		t.Fatalf("redeploying the same definition = %+v, %v; want version 1, not new", again, err)
	}
	id, err := eng.Start(ctx, "doubler", map[string]any{"amount": 60})
	if err != nil {
		t.Fatal(err)
	}
	v := waitDone(t, eng, id)
	if v.Status != instance.Completed || v.Variables["amount"] != int64(120) || v.Variables["size"] != "big" {
		t.Fatalf("view = %+v", v)
	}
	if v.EndedAt == nil || len(v.ActiveNodes) != 0 {
		t.Fatalf("finished view = %+v", v)
	}
}

func TestTimerCatchAndCancel(t *testing.T) {
	t.Parallel()
	env := streamstest.Start(t)
	eng := openEngine(t, env, nil)
	ctx := context.Background()
	p := build(t, model.NewBuilder("wait").
		StartEvent("s").TimerCatchEvent("short", model.Duration("PT0.3S")).
		TimerCatchEvent("long", model.Duration("PT1H")).EndEvent("e").
		Sequence("s", "short", "long", "e"))
	if _, err := eng.Deploy(ctx, p); err != nil {
		t.Fatal(err)
	}
	id, err := eng.Start(ctx, "wait", nil)
	if err != nil {
		t.Fatal(err)
	}
	wctx, wcancel := context.WithTimeout(ctx, 15*time.Second)
	defer wcancel()
	if v, err := eng.WaitUntil(wctx, id, func(v *engine.InstanceView) bool {
		return len(v.ActiveNodes) == 1 && v.ActiveNodes[0] == "long"
	}); err != nil {
		t.Fatalf("instance never reached the long timer: %+v %v", v, err)
	}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := eng.Cancel(cctx, id, "test"); err != nil {
		t.Fatal(err)
	}
	v, _ := eng.Instance(ctx, id)
	if v.Status != instance.Terminated {
		t.Fatalf("status = %s", v.Status)
	}
	if err := eng.Cancel(cctx, id, "again"); !errors.Is(err, engine.ErrFinished) {
		t.Fatalf("second cancel: %v, want ErrFinished", err)
	}
	if _, err := eng.Instance(ctx, "nope"); !errors.Is(err, engine.ErrNotFound) {
		t.Fatalf("unknown instance: %v", err)
	}
	if _, err := eng.Start(ctx, "missing", nil); !errors.Is(err, engine.ErrNotFound) {
		t.Fatalf("unknown process: %v", err)
	}
}

// waitIncident waits until the instance has an open incident and returns
// the view and that incident.
func waitIncident(t testing.TB, eng *engine.Engine, id string) (*engine.InstanceView, engine.IncidentSummary) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	v, err := eng.WaitUntil(ctx, id, func(v *engine.InstanceView) bool { return v.Status != instance.Active })
	if err != nil || v.Status != engine.StatusIncident || len(v.Incidents) == 0 {
		t.Fatalf("instance %s: want an open incident, got %+v (%v)", id, v, err)
	}
	return v, v.Incidents[0]
}
