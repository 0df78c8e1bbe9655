package instance

import (
	"slices"
	"testing"

	"github.com/jetbpm/jetbpm/engine/model"
)

func signalEvent(id, name string, vars map[string]any, waits ...string) Event {
	return Event{ID: "signal:" + id, Kind: SignalTo, Vars: vars, Signal: &Broadcast{ID: id, Name: name, Waits: waits}}
}

func sigWaits(s *State) []*Wait {
	var out []*Wait
	for _, w := range s.Waits {
		if w.Kind == SignalWait {
			out = append(out, w)
		}
	}
	return out
}

func TestSignalCatch(t *testing.T) {
	s, env := run(t, model.NewBuilder("p").StartEvent("s").SignalCatchEvent("c", "go").EndEvent("e").Sequence("s", "c", "e"), nil)
	ws := sigWaits(s)
	if len(ws) != 1 || ws[0].Sub.Name != "go" || ws[0].Node != "c" {
		t.Fatalf("signal waits %s", dumpWaits(s))
	}
	if got := effects(s, SignalSubscribe); len(got) != 1 || got[0].Sub.Wait != ws[0].ID || got[0].Sub.Name != "go" {
		t.Fatalf("SignalSubscribe %+v", got)
	}
	flush(s)
	if n := apply(t, s, env, signalEvent("b1", "other", nil)); n != 0 {
		t.Fatalf("another signal applied")
	}
	apply(t, s, env, signalEvent("b1", "go", map[string]any{"x": 1}, ws[0].ID))
	assertStatus(t, s, Completed)
	assertVars(t, s.Variables(), map[string]any{"x": int64(1)})
	if got := effectWaits(s, SignalUnsubscribe); !slices.Equal(got, []string{ws[0].ID}) {
		t.Fatalf("SignalUnsubscribe %v: the fired wait leaves the index", got)
	}
}

// signalBoundaries: external task "work" with an interrupting signal
// boundary "stop" and a non-interrupting one "tick" (counting).
func signalBoundaries() *model.Builder {
	return model.NewBuilder("sb").StartEvent("start").ServiceTask("work", "", model.WithWorker("w")).EndEvent("end").
		SignalBoundary("stop", "work", "stop", true).EndEvent("stopped").
		SignalBoundary("tick", "work", "tick", false).ScriptTask("count", "(ticks ?? 0) + 1", "ticks").EndEvent("ticked").
		Sequence("start", "work", "end").Sequence("stop", "stopped").Sequence("tick", "count", "ticked")
}

func TestSignalBoundaries(t *testing.T) {
	s, env := run(t, signalBoundaries(), nil)
	if got := effects(s, SignalSubscribe); len(got) != 2 || got[0].Sub.Repeat || !got[1].Sub.Repeat {
		t.Fatalf("SignalSubscribe %+v", got)
	}
	flush(s)
	tick := sigWaits(s)[1]
	apply(t, s, env, signalEvent("b1", "tick", nil, tick.ID))
	apply(t, s, env, signalEvent("b2", "tick", nil, tick.ID))
	// A redelivered broadcast fires the repeating boundary once.
	if n := apply(t, s, env, signalEvent("b2", "tick", nil, tick.ID)); n != 0 {
		t.Fatalf("redelivered broadcast applied again")
	}
	assertVars(t, s.Variables(), map[string]any{"ticks": int64(2)})
	if len(effects(s, SignalUnsubscribe)) != 0 || len(sigWaits(s)) != 2 {
		t.Fatalf("the repeating wait must stay subscribed: %s %+v", dumpWaits(s), s.Outbox)
	}
	apply(t, s, env, signalEvent("b3", "stop", nil))
	assertStatus(t, s, Completed)
	if got := effectWaits(s, SignalUnsubscribe); len(got) != 2 {
		t.Fatalf("SignalUnsubscribe %v: both boundaries leave the index", got)
	}
	if len(effects(s, CancelJob)) != 1 {
		t.Fatalf("the job is not cancelled: %+v", s.Outbox)
	}
}

func TestSignalStaleIndexEntryDropped(t *testing.T) {
	s, env := run(t, model.NewBuilder("p").StartEvent("s").SignalCatchEvent("c", "go").EndEvent("e").Sequence("s", "c", "e"), nil)
	flush(s)
	if n := apply(t, s, env, signalEvent("b1", "go", nil, sigWaits(s)[0].ID, "gone/c/9")); n != 1 {
		t.Fatalf("applied %d", n)
	}
	got := effectWaits(s, SignalUnsubscribe)
	if !slices.Contains(got, "gone/c/9") {
		t.Fatalf("SignalUnsubscribe %v: the stale entry must be dropped", got)
	}
}

func TestSignalThrow(t *testing.T) {
	s, _ := run(t, model.NewBuilder("p").StartEvent("s").
		SignalThrowEvent("t", "go", model.Input("amount", "a")).SignalEndEvent("e", "done").Sequence("s", "t", "e"),
		map[string]any{"a": 5})
	assertStatus(t, s, Completed)
	got := effects(s, BroadcastSignal)
	if len(got) != 2 || got[0].Signal.Name != "go" || got[1].Signal.Name != "done" || got[0].ID == got[1].ID {
		t.Fatalf("BroadcastSignal %+v", got)
	}
	assertVars(t, got[0].Signal.Vars, map[string]any{"amount": int64(5)})
	if got[1].Signal.Vars != nil {
		t.Fatalf("a throw without mappings sends no variables: %v", got[1].Signal.Vars)
	}
}

func TestSignalStart(t *testing.T) {
	env := newEnv(build(t, model.NewBuilder("p").SignalStartEvent("s", "go").EndEvent("e").Sequence("s", "e")), nil)
	s := startWith(t, env, map[string]any{"v": 1}, Begin{Node: "s"})
	assertStatus(t, s, Completed)
	assertVars(t, s.Variables(), map[string]any{"v": int64(1)})
}
