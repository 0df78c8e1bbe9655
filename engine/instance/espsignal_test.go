package instance

import (
	"slices"
	"testing"

	"github.com/jetbpm/jetbpm/engine/model"
)

// An interrupting signal event sub-process: its scope-level wait is in the
// signal index from the start; the broadcast cancels the scope's tokens,
// runs the event sub-process once with the signal's variables and takes
// the wait out of the index.
func TestInterruptingSignalEventSub(t *testing.T) {
	b := espWork()
	b.EventSubProcess("stopEsp", true).SignalStartEvent("stop", "stop").
		ScriptTask("mark", "true", "stopped").EndEvent("stopEnd").Sequence("stop", "mark", "stopEnd")
	s, env := run(t, b, nil)
	stop := waitAt(t, s, "stop")
	if stop.Kind != SignalWait || stop.Scope != RootScope || stop.Track != "" || stop.Sub.Name != "stop" || stop.Sub.Repeat {
		t.Fatalf("stop wait %+v sub %+v", stop, stop.Sub)
	}
	if got := effectWaits(s, SignalSubscribe); !slices.Equal(got, []string{stop.ID}) {
		t.Fatalf("SignalSubscribe %v, want the stop wait", got)
	}
	work := waitAt(t, s, "work")
	flush(s)
	apply(t, s, env, signalEvent("b1", "stop", map[string]any{"reason": "fraud"}, stop.ID))
	assertStatus(t, s, Completed)
	assertVars(t, s.Variables(), map[string]any{"reason": "fraud", "stopped": true})
	if got := effectWaits(s, CancelJob); !slices.Equal(got, []string{work.ID}) {
		t.Errorf("CancelJob %v, want work's", got)
	}
	if got := effectWaits(s, SignalUnsubscribe); !slices.Equal(got, []string{stop.ID}) {
		t.Errorf("SignalUnsubscribe %v, want the fired wait", got)
	}
	if len(s.Waits) != 0 {
		t.Errorf("waits left: %s", dumpWaits(s))
	}
}

// A non-interrupting signal event sub-process runs on every broadcast
// (once per broadcast id) beside the scope's tokens; its wait stays in the
// index until the scope ends, and leaves it in that step.
func TestNonInterruptingSignalEventSub(t *testing.T) {
	b := espWork()
	b.EventSubProcess("tickEsp", false).SignalStartEvent("tick", "tick").
		ScriptTask("count", "(ticks ?? 0) + 1", "ticks").EndEvent("tickEnd").Sequence("tick", "count", "tickEnd")
	s, env := run(t, b, nil)
	tick := waitAt(t, s, "tick")
	if tick.Kind != SignalWait || tick.Scope != RootScope || !tick.Sub.Repeat {
		t.Fatalf("tick wait %+v sub %+v", tick, tick.Sub)
	}
	flush(s)
	apply(t, s, env, signalEvent("b1", "tick", nil, tick.ID))
	apply(t, s, env, signalEvent("b2", "tick", nil, tick.ID))
	if n := apply(t, s, env, signalEvent("b2", "tick", nil, tick.ID)); n != 0 {
		t.Fatalf("a redelivered broadcast was applied")
	}
	assertVars(t, s.Variables(), map[string]any{"ticks": int64(2)})
	if w := waitAt(t, s, "tick"); w != tick || len(effects(s, SignalUnsubscribe)) != 0 {
		t.Fatalf("the repeating wait changed or left the index: %s, %+v", dumpWaits(s), effects(s, SignalUnsubscribe))
	}
	assertStatus(t, s, Active)
	apply(t, s, env, jobDoneEvent(waitAt(t, s, "work"), nil))
	assertStatus(t, s, Completed)
	if got := effectWaits(s, SignalUnsubscribe); !slices.Equal(got, []string{tick.ID}) {
		t.Errorf("SignalUnsubscribe %v, want the tick wait closed with the instance", got)
	}
}

// A signal event sub-process of an embedded sub-process: its name
// expression is evaluated over the scope's variables when the scope
// starts, and its wait leaves the index in the step the scope completes.
// A name that cannot be evaluated faults the sub-process, arming nothing.
func TestSignalEventSubClosesWithItsScope(t *testing.T) {
	nested := func() *model.Builder {
		b := model.NewBuilder("nested").StartEvent("start")
		sub := b.SubProcess("sub")
		sub.StartEvent("subStart").ServiceTask("inner", "", model.WithWorker("w")).EndEvent("subEnd").Sequence("subStart", "inner", "subEnd")
		sub.EventSubProcess("abort", true).SignalStartEvent("abortSig", "", model.SignalNameExpr(`"abort-" + order`)).
			EndEvent("aborted").Sequence("abortSig", "aborted")
		b.ServiceTask("after", "", model.WithWorker("a")).EndEvent("end").Sequence("start", "sub", "after", "end")
		return b
	}
	t.Run("completed", func(t *testing.T) {
		s, env := run(t, nested(), map[string]any{"order": "o-1"})
		w := waitAt(t, s, "abortSig")
		if w.Scope != subScope(t, s).ID || w.Sub.Name != "abort-o-1" {
			t.Fatalf("abort wait scope %q name %q", w.Scope, w.Sub.Name)
		}
		flush(s)
		apply(t, s, env, jobDoneEvent(waitAt(t, s, "inner"), nil))
		if !slices.Equal(s.ActiveNodes(), []string{"after"}) {
			t.Fatalf("active %v, want after", s.ActiveNodes())
		}
		if got := effectWaits(s, SignalUnsubscribe); !slices.Equal(got, []string{w.ID}) {
			t.Errorf("SignalUnsubscribe %v, want the abort wait closed with its scope", got)
		}
		if slices.ContainsFunc(s.Waits, func(x *Wait) bool { return x.Kind == SignalWait }) {
			t.Errorf("a signal wait is left: %s", dumpWaits(s))
		}
	})
	t.Run("interrupted", func(t *testing.T) {
		s, env := run(t, nested(), map[string]any{"order": "o-1"})
		w := waitAt(t, s, "abortSig")
		flush(s)
		apply(t, s, env, signalEvent("b1", "abort-o-1", nil, w.ID))
		if !slices.Equal(s.ActiveNodes(), []string{"after"}) {
			t.Fatalf("active %v, want after", s.ActiveNodes())
		}
		if got := effectWaits(s, SignalUnsubscribe); !slices.Equal(got, []string{w.ID}) {
			t.Errorf("SignalUnsubscribe %v, want the fired wait", got)
		}
	})
	t.Run("bad name", func(t *testing.T) {
		s, _ := run(t, nested(), map[string]any{"order": 7})
		assertIncident(t, s, "sub", "signal name")
		if len(effects(s, SignalSubscribe)) != 0 {
			t.Errorf("SignalSubscribe %+v, want nothing armed", effects(s, SignalSubscribe))
		}
	})
}
