package instance

import (
	"slices"
	"testing"

	"github.com/jetbpm/jetbpm/engine/model"
)

// plainWait is start → plain receive task "w" (output total = n * 2, with
// a one-hour timer boundary "late" to "timeout") → end.
func plainWait(opts ...model.NodeOption) *model.Builder {
	return model.NewBuilder("plain").StartEvent("start").WaitTask("w", opts...).EndEvent("end").
		TimerBoundary("late", "w", model.Duration("PT1H"), true).EndEvent("timeout").
		Sequence("start", "w", "end").Flow("late", "timeout")
}

func triggerEvent(id string, w *Wait, vars map[string]any) Event {
	return Event{ID: id, Kind: Trigger, Wait: w.ID, Vars: vars}
}

func TestTriggerMovesThePlainWaitOn(t *testing.T) {
	s, env := run(t, plainWait(), nil)
	assertStatus(t, s, Active)
	w := waitAt(t, s, "w")
	late := waitAt(t, s, "late")
	if w.Kind != TriggerWait || late.Kind != BoundaryWait {
		t.Fatalf("waits %s", dumpWaits(s))
	}
	if len(effects(s, Subscribe)) != 0 {
		t.Errorf("a plain receive task subscribed: %+v", effects(s, Subscribe))
	}
	flush(s)
	if n := apply(t, s, env, triggerEvent("r1", w, map[string]any{"answer": "yes"})); n != 1 {
		t.Fatalf("applied %d, want 1", n)
	}
	assertStatus(t, s, Completed)
	assertVars(t, s.Variables(), map[string]any{"answer": "yes"})
	if !slices.Equal(effectWaits(s, CancelTimer), []string{late.ID}) {
		t.Errorf("CancelTimer %v, want the boundary's %s", effectWaits(s, CancelTimer), late.ID)
	}
	if !slices.Contains(s.Correlations, "r1") {
		t.Errorf("correlations %v lack the request", s.Correlations)
	}
}

// Output mappings see the trigger's variables as the task's results.
func TestTriggerOutputs(t *testing.T) {
	s, env := run(t, plainWait(model.Output("total", "n * 2")), nil)
	apply(t, s, env, triggerEvent("r1", waitAt(t, s, "w"), map[string]any{"n": int64(21)}))
	assertStatus(t, s, Completed)
	assertVars(t, s.Variables(), map[string]any{"total": int64(42)})
}

// A trigger for a wait the instance no longer has, a repeated request and
// a wait of another kind are not applied.
func TestTriggerRefusals(t *testing.T) {
	s, env := run(t, plainWait(), nil)
	w, late := waitAt(t, s, "w"), waitAt(t, s, "late")
	if n := apply(t, s, env, triggerEvent("r0", late, nil)); n != 0 {
		t.Errorf("a trigger on a timer wait applied")
	}
	if n := apply(t, s, env, Event{Kind: Trigger, Wait: w.ID}); n != 0 {
		t.Errorf("a trigger without a request id applied")
	}
	if n := apply(t, s, env, triggerEvent("r1", w, map[string]any{"": 1})); n != 0 {
		t.Errorf("a trigger with an empty variable name applied")
	}
	assertStatus(t, s, Active)

	fire(t, s, env, "late")
	assertStatus(t, s, Completed)
	if n := apply(t, s, env, triggerEvent("r2", w, nil)); n != 0 {
		t.Errorf("a trigger after the boundary interrupted the task applied")
	}

	s, env = run(t, plainWait(), nil)
	w = waitAt(t, s, "w")
	s.Correlations = append(s.Correlations, "r3")
	if n := apply(t, s, env, triggerEvent("r3", w, nil)); n != 0 {
		t.Errorf("a request applied before applied again")
	}
}

// A signal catch after an event-based gateway: the broadcast wins the
// branch and closes the others.
func TestEventGatewaySignalWins(t *testing.T) {
	b := model.NewBuilder("sig").StartEvent("start").EventBasedGateway("g").
		SignalCatchEvent("go", "order-go").ScriptTask("s", "'signal'", "path").
		TimerCatchEvent("late", model.Duration("PT1H")).ScriptTask("l", "'late'", "path").
		EndEvent("end").
		Flow("start", "g").Flow("g", "go").Flow("g", "late").
		Sequence("go", "s", "end").Sequence("late", "l", "end")
	s, env := run(t, b, nil)
	sig, late := waitAt(t, s, "go"), waitAt(t, s, "late")
	if sig.Kind != SignalWait || sig.Sub.Name != "order-go" || !slices.Equal(effectWaits(s, SignalSubscribe), []string{sig.ID}) {
		t.Fatalf("signal branch %+v, subscribe %v", sig, effectWaits(s, SignalSubscribe))
	}
	flush(s)
	apply(t, s, env, signalEvent("b1", "order-go", map[string]any{"who": "ops"}, sig.ID))
	assertStatus(t, s, Completed)
	assertVars(t, s.Variables(), map[string]any{"path": "signal", "who": "ops"})
	if !slices.Equal(effectWaits(s, CancelTimer), []string{late.ID}) {
		t.Errorf("CancelTimer %v, want %s", effectWaits(s, CancelTimer), late.ID)
	}

	// The timer wins: the signal subscription is taken back.
	s, env = run(t, b, nil)
	sig = waitAt(t, s, "go")
	flush(s)
	fire(t, s, env, "late")
	assertVars(t, s.Variables(), map[string]any{"path": "late"})
	if !slices.Equal(effectWaits(s, SignalUnsubscribe), []string{sig.ID}) {
		t.Errorf("SignalUnsubscribe %v, want %s", effectWaits(s, SignalUnsubscribe), sig.ID)
	}
}
