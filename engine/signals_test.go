package engine_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/jetbpm/jetbpm/engine"
	"github.com/jetbpm/jetbpm/engine/instance"
	"github.com/jetbpm/jetbpm/engine/model"
	"github.com/jetbpm/jetbpm/internal/testwait"
	"github.com/jetbpm/jetbpm/streams"
	"github.com/jetbpm/jetbpm/streams/streamstest"
)

// signalIndex returns the number of open subscriptions of signal name in
// the index.
func signalIndex(t testing.TB, env *streamstest.Env, name string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	kv, err := env.JS.KeyValue(ctx, streams.SignalsBucket)
	if err != nil {
		t.Fatal(err)
	}
	l, err := kv.ListKeysFiltered(ctx, streams.SignalKeys(name))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for range l.Keys() {
		n++
	}
	return n
}

func signalsSubscribed(t testing.TB, env *streamstest.Env, name string, n int) {
	t.Helper()
	testwait.True(t, 20*time.Second, fmt.Sprintf("%d subscriptions of signal %q indexed", n, name), func() bool {
		return signalIndex(t, env, name) == n
	})
}

// signalCatcher: start → catch signal name → end.
func signalCatcher(t testing.TB, id, name string) *model.Process {
	return build(t, model.NewBuilder(id).StartEvent("s").SignalCatchEvent("c", name).EndEvent("e").Sequence("s", "c", "e"))
}

// signalBoundaries: a job nobody works, an interrupting boundary on
// "stop" and a non-interrupting one on "tick" that counts.
func signalBoundaryProcess(t testing.TB) *model.Process {
	return build(t, model.NewBuilder("guarded").StartEvent("start").ServiceTask("work", "", model.WithWorker("nobody")).EndEvent("end").
		SignalBoundary("stop", "work", "stop", true).EndEvent("stopped").
		SignalBoundary("tick", "work", "tick", false).ScriptTask("count", "(ticks ?? 0) + 1", "ticks").EndEvent("ticked").
		Sequence("start", "work", "end").Sequence("stop", "stopped").Sequence("tick", "count", "ticked"))
}

func TestSignalReachesEveryCatchOfTwoProcesses(t *testing.T) {
	t.Parallel()
	env := streamstest.Start(t)
	eng := openEngine(t, env, nil)
	ctx := bounded(t)
	if _, err := eng.DeployAll(ctx, signalCatcher(t, "a", "go"), signalCatcher(t, "b", "go"), signalCatcher(t, "other", "stay")); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for i := range 10 {
		for _, p := range []string{"a", "b"} {
			id, err := eng.Start(ctx, p, map[string]any{"i": i})
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, id)
		}
	}
	bystander, err := eng.Start(ctx, "other", nil)
	if err != nil {
		t.Fatal(err)
	}
	signalsSubscribed(t, env, "go", 20)
	signalsSubscribed(t, env, "stay", 1)
	res, err := eng.BroadcastSignal(ctx, engine.Signal{Name: "go", Vars: map[string]any{"went": true}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Instances) != 20 || len(res.Started) != 0 {
		t.Fatalf("broadcast reached %d instances, started %v; want 20, none", len(res.Instances), res.Started)
	}
	for _, id := range ids {
		if v := waitDone(t, eng, id); v.Status != instance.Completed || v.Variables["went"] != true {
			t.Fatalf("instance %s: %+v", id, v)
		}
	}
	signalsSubscribed(t, env, "go", 0) // fired waits leave the index
	if v, err := eng.Instance(ctx, bystander); err != nil || v.Status != instance.Active {
		t.Fatalf("an instance waiting for another signal moved: %+v %v", v, err)
	}
}

func TestSignalBoundaries(t *testing.T) {
	t.Parallel()
	env := streamstest.Start(t)
	eng := openEngine(t, env, nil)
	ctx := bounded(t)
	if _, err := eng.Deploy(ctx, signalBoundaryProcess(t)); err != nil {
		t.Fatal(err)
	}
	id, err := eng.Start(ctx, "guarded", nil)
	if err != nil {
		t.Fatal(err)
	}
	signalsSubscribed(t, env, "tick", 1)
	signalsSubscribed(t, env, "stop", 1)
	for i := range 3 {
		if _, err := eng.BroadcastSignal(ctx, engine.Signal{Name: "tick", ID: fmt.Sprintf("tick-%d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	// The same broadcast again (a retry) fires nothing more.
	if _, err := eng.BroadcastSignal(ctx, engine.Signal{Name: "tick", ID: "tick-2"}); err != nil {
		t.Fatal(err)
	}
	testwait.True(t, 20*time.Second, "three ticks counted", func() bool {
		v, err := eng.Instance(ctx, id)
		return err == nil && v.Variables["ticks"] == int64(3)
	})
	if _, err := eng.BroadcastSignal(ctx, engine.Signal{Name: "stop"}); err != nil {
		t.Fatal(err)
	}
	v := waitDone(t, eng, id)
	if v.Status != instance.Completed || v.Variables["ticks"] != int64(3) {
		t.Fatalf("after stop: %+v", v)
	}
	signalsSubscribed(t, env, "tick", 0)
	signalsSubscribed(t, env, "stop", 0)
}

func TestSignalIsNotBuffered(t *testing.T) {
	t.Parallel()
	env := streamstest.Start(t)
	eng := openEngine(t, env, nil)
	ctx := bounded(t)
	if _, err := eng.Deploy(ctx, signalCatcher(t, "a", "go")); err != nil {
		t.Fatal(err)
	}
	res, err := eng.BroadcastSignal(ctx, engine.Signal{Name: "go", Vars: map[string]any{"n": 1}})
	if err != nil || len(res.Instances) != 0 {
		t.Fatalf("broadcast to nobody: %+v %v", res, err)
	}
	id, err := eng.Start(ctx, "a", nil)
	if err != nil {
		t.Fatal(err)
	}
	signalsSubscribed(t, env, "go", 1)
	if v, err := eng.Instance(ctx, id); err != nil || v.Status != instance.Active {
		t.Fatalf("the earlier signal reached a later subscription: %+v %v", v, err)
	}
	if _, err := eng.BroadcastSignal(ctx, engine.Signal{Name: "go", Vars: map[string]any{"n": 2}}); err != nil {
		t.Fatal(err)
	}
	if v := waitDone(t, eng, id); v.Variables["n"] != int64(2) {
		t.Fatalf("want the second broadcast's variables: %+v", v.Variables)
	}
}

func TestSignalStartsOneInstancePerProcessLatestVersion(t *testing.T) {
	t.Parallel()
	env := streamstest.Start(t)
	eng := openEngine(t, env, nil)
	ctx := bounded(t)
	v1 := build(t, model.NewBuilder("s1").SignalStartEvent("st", "launch").EndEvent("e1").Sequence("st", "e1"))
	v2 := build(t, model.NewBuilder("s1").SignalStartEvent("st", "launch").ScriptTask("x", "1", "v2").EndEvent("e2").Sequence("st", "x", "e2"))
	other := build(t, model.NewBuilder("s2").SignalStartEvent("st", "launch").EndEvent("e").Sequence("st", "e"))
	gone := build(t, model.NewBuilder("s3").SignalStartEvent("st", "launch").EndEvent("e").Sequence("st", "e"))
	goneV2 := build(t, model.NewBuilder("s3").StartEvent("st").EndEvent("e").Sequence("st", "e"))
	for _, p := range []*model.Process{v1, v2, other, gone, goneV2} {
		if _, err := eng.Deploy(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	res, err := eng.BroadcastSignal(ctx, engine.Signal{Name: "launch", ID: "l-1", Vars: map[string]any{"by": "test"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Started) != 2 {
		t.Fatalf("started %v; want one instance of s1 (v2) and one of s2, none of s3 (its latest version has no signal start)", res.Started)
	}
	byProcess := map[string]*engine.InstanceView{}
	for _, id := range res.Started {
		v := waitDone(t, eng, id)
		byProcess[v.ProcessID] = v
		if v.Variables["by"] != "test" {
			t.Fatalf("start variables: %+v", v.Variables)
		}
	}
	if v := byProcess["s1"]; v == nil || v.Version != 2 || v.Variables["v2"] != int64(1) {
		t.Fatalf("s1: %+v", v)
	}
	// A repeated broadcast (same id) starts nothing new.
	again, err := eng.BroadcastSignal(ctx, engine.Signal{Name: "launch", ID: "l-1"})
	if err != nil || !slices.Equal(again.Started, res.Started) {
		t.Fatalf("repeat: %+v %v", again, err)
	}
	all, err := eng.Instances(ctx, engine.Filter{})
	if err != nil || len(all) != 2 {
		t.Fatalf("instances after a repeated broadcast: %d %v", len(all), err)
	}
}

func TestSignalThrowReachesOtherInstances(t *testing.T) {
	t.Parallel()
	env := streamstest.Start(t)
	eng := openEngine(t, env, nil)
	ctx := bounded(t)
	thrower := build(t, model.NewBuilder("thrower").StartEvent("s").
		SignalThrowEvent("t", "", model.SignalNameExpr("name"), model.Input("amount", "a")).SignalEndEvent("e", "finished").Sequence("s", "t", "e"))
	if _, err := eng.DeployAll(ctx, signalCatcher(t, "catcher", "paid"), signalCatcher(t, "watcher", "finished"), thrower); err != nil {
		t.Fatal(err)
	}
	c, err := eng.Start(ctx, "catcher", nil)
	if err != nil {
		t.Fatal(err)
	}
	w, err := eng.Start(ctx, "watcher", nil)
	if err != nil {
		t.Fatal(err)
	}
	signalsSubscribed(t, env, "paid", 1)
	signalsSubscribed(t, env, "finished", 1)
	if _, err := eng.Start(ctx, "thrower", map[string]any{"a": 7, "name": "paid"}); err != nil {
		t.Fatal(err)
	}
	if v := waitDone(t, eng, c); v.Variables["amount"] != int64(7) {
		t.Fatalf("catcher: %+v", v)
	}
	if v := waitDone(t, eng, w); v.Status != instance.Completed {
		t.Fatalf("watcher: %+v", v)
	}
}

func TestSignalFromPlainNATS(t *testing.T) {
	t.Parallel()
	env := streamstest.Start(t)
	eng := openEngine(t, env, nil)
	ctx := bounded(t)
	if _, err := eng.Deploy(ctx, signalCatcher(t, "a", "order.cancelled")); err != nil {
		t.Fatal(err)
	}
	id, err := eng.Start(ctx, "a", nil)
	if err != nil {
		t.Fatal(err)
	}
	signalsSubscribed(t, env, "order.cancelled", 1)
	// A malformed token is refused and does not stop the consumer.
	if _, err := env.JS.Publish(ctx, "jetbpm.s.broadcast.order=2e", nil); err != nil {
		t.Fatal(err)
	}
	m := nats.NewMsg(streams.SignalSubject("order.cancelled"))
	m.Data = []byte(`{"reason": "fraud", "n": 3}`)
	m.Header.Set("Nats-Msg-Id", "cancel-991")
	if _, err := env.JS.PublishMsg(ctx, m); err != nil {
		t.Fatal(err)
	}
	if v := waitDone(t, eng, id); v.Variables["reason"] != "fraud" || v.Variables["n"] != int64(3) {
		t.Fatalf("instance: %+v", v.Variables)
	}
}

// TestSignalBroadcastTo1000Instances measures one broadcast reaching
// 1,000 waiting instances (docs/performance.md, "Signals"): the fan-out
// (listing the index, one event per instance) and the time until every
// instance has taken it.
func TestSignalBroadcastTo1000Instances(t *testing.T) {
	if testing.Short() {
		t.Skip("starts 1,000 instances")
	}
	env := streamstest.Start(t)
	eng := openEngine(t, env, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if _, err := eng.Deploy(ctx, signalCatcher(t, "many", "all")); err != nil {
		t.Fatal(err)
	}
	const n = 1000
	for range n {
		if _, err := eng.Start(ctx, "many", nil); err != nil {
			t.Fatal(err)
		}
	}
	testwait.True(t, 2*time.Minute, "1,000 subscriptions indexed", func() bool { return signalIndex(t, env, "all") == n })
	began := time.Now()
	res, err := eng.BroadcastSignal(ctx, engine.Signal{Name: "all"})
	if err != nil {
		t.Fatal(err)
	}
	fanOut := time.Since(began)
	if len(res.Instances) != n {
		t.Fatalf("reached %d instances, want %d", len(res.Instances), n)
	}
	testwait.True(t, 2*time.Minute, "every instance completed", func() bool {
		done, err := eng.Instances(ctx, engine.Filter{Status: instance.Completed})
		return err == nil && len(done) == n
	})
	t.Logf("one broadcast to %d waiting instances: fan-out %v, all completed after %v", n, fanOut, time.Since(began))
}
