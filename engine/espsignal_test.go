package engine_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/jetbpm/jetbpm/engine"
	"github.com/jetbpm/jetbpm/engine/instance"
	"github.com/jetbpm/jetbpm/engine/model"
	"github.com/jetbpm/jetbpm/internal/testwait"
	"github.com/jetbpm/jetbpm/streams/streamstest"
)

// Signal event sub-processes with real broadcasts: a non-interrupting one
// inside an embedded sub-process (its name evaluated over the instance's
// variables) runs once per broadcast; an interrupting one at process
// level ends the instance, and both waits leave the signal index — the
// inner one closed with its scope.
func TestSignalEventSubProcesses(t *testing.T) {
	t.Parallel()
	env := streamstest.Start(t)
	eng := openEngine(t, env, nil)
	ctx := bounded(t)
	b := model.NewBuilder("espsig").StartEvent("start")
	sub := b.SubProcess("sub")
	sub.StartEvent("subStart").ServiceTask("work", "", model.WithWorker("nobody")).EndEvent("subEnd").Sequence("subStart", "work", "subEnd")
	sub.EventSubProcess("tickEsp", false).SignalStartEvent("tick", "", model.SignalNameExpr(`"tick-" + order`)).
		ScriptTask("count", "(ticks ?? 0) + 1", "ticks").EndEvent("ticked").Sequence("tick", "count", "ticked")
	b.EndEvent("end").Sequence("start", "sub", "end")
	b.EventSubProcess("stopEsp", true).SignalStartEvent("stop", "stop").EndEvent("stopped").Sequence("stop", "stopped")
	if _, err := eng.Deploy(ctx, build(t, b)); err != nil {
		t.Fatal(err)
	}
	id, err := eng.Start(ctx, "espsig", map[string]any{"order": "o1"})
	if err != nil {
		t.Fatal(err)
	}
	signalsSubscribed(t, env, "tick-o1", 1)
	signalsSubscribed(t, env, "stop", 1)
	for i := range 2 {
		res, err := eng.BroadcastSignal(ctx, engine.Signal{Name: "tick-o1", ID: fmt.Sprintf("tick-%d", i)})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Instances) != 1 || len(res.Started) != 0 {
			t.Fatalf("tick %d reached %v, started %v; want the instance", i, res.Instances, res.Started)
		}
	}
	if _, err := eng.BroadcastSignal(ctx, engine.Signal{Name: "tick-o1", ID: "tick-1"}); err != nil { // a retry
		t.Fatal(err)
	}
	testwait.True(t, 20*time.Second, "two ticks counted", func() bool {
		v, err := eng.Instance(ctx, id)
		return err == nil && v.Variables["ticks"] == int64(2)
	})
	if _, err := eng.BroadcastSignal(ctx, engine.Signal{Name: "stop", Vars: map[string]any{"why": "test"}}); err != nil {
		t.Fatal(err)
	}
	v := waitDone(t, eng, id)
	if v.Status != instance.Completed || v.Variables["ticks"] != int64(2) || v.Variables["why"] != "test" {
		t.Fatalf("after stop: %+v", v)
	}
	signalsSubscribed(t, env, "tick-o1", 0)
	signalsSubscribed(t, env, "stop", 0)
}
