package instance

import (
	"slices"
	"testing"

	"github.com/jetbpm/jetbpm/engine/model"
	"github.com/jetbpm/jetbpm/incidents"
)

// race is an event-based gateway with three branches: message "paid"
// (key orderId), a receive task "shipped" and a timer "late" (timer),
// each marking the path it took.
func race(timer model.Timer) *model.Builder {
	return model.NewBuilder("race").StartEvent("start").EventBasedGateway("g").
		MessageCatchEvent("paid", "paid", "orderId", model.Output("amount", "sum")).ScriptTask("p", "'paid'", "path").
		ReceiveTask("shipped", "shipped", "orderId").ScriptTask("s", "'shipped'", "path").
		TimerCatchEvent("late", timer).ScriptTask("l", "'late'", "path").
		EndEvent("end").
		Flow("start", "g").Flow("g", "paid").Flow("g", "shipped").Flow("g", "late").
		Sequence("paid", "p", "end").Sequence("shipped", "s", "end").Sequence("late", "l", "end")
}

func TestEventGatewayParks(t *testing.T) {
	s, _ := run(t, race(model.Duration("PT1H")), map[string]any{"orderId": 17})
	assertStatus(t, s, Active)
	tr := s.Tracks[0]
	paid, shipped, late := msgWait(t, s, "paid"), msgWait(t, s, "shipped"), waitAt(t, s, "late")
	for _, w := range []*Wait{&paid, &shipped, late} {
		if w.Track != tr.ID {
			t.Errorf("wait %s on track %s, want the gateway's %s", w.ID, w.Track, tr.ID)
		}
	}
	if tr.Node != "g" || tr.State != Waiting || late.Kind != TimerWait || paid.Sub.Key != "17" || shipped.Sub.Name != "shipped" {
		t.Fatalf("track %+v, late %+v, paid %+v", tr, late, paid.Sub)
	}
	if !slices.Equal(subs(s, Subscribe), []string{paid.ID, shipped.ID}) || !slices.Equal(effectWaits(s, ScheduleTimer), []string{late.ID}) {
		t.Errorf("Subscribe %v, ScheduleTimer %v", subs(s, Subscribe), effectWaits(s, ScheduleTimer))
	}
}

func TestEventGatewayMessageWins(t *testing.T) {
	s, env := run(t, race(model.Duration("PT1H")), map[string]any{"orderId": 17})
	shipped, late := msgWait(t, s, "shipped"), waitAt(t, s, "late")
	flush(s)
	correlate(t, s, env, "paid", 1, map[string]any{"sum": 20})
	assertStatus(t, s, Completed)
	assertVars(t, s.Variables(), map[string]any{"path": "paid", "amount": int64(20)})
	if !slices.Equal(subs(s, Unsubscribe), []string{shipped.ID}) || !slices.Equal(effectWaits(s, CancelTimer), []string{late.ID}) {
		t.Errorf("Unsubscribe %v, CancelTimer %v", subs(s, Unsubscribe), effectWaits(s, CancelTimer))
	}

	// The receive task branch wins the same way, its outputs none: the
	// message's variables merge.
	s, env = run(t, race(model.Duration("PT1H")), map[string]any{"orderId": 17})
	correlate(t, s, env, "shipped", 1, map[string]any{"carrier": "ups"})
	assertVars(t, s.Variables(), map[string]any{"path": "shipped", "carrier": "ups"})
}

func TestEventGatewayTimerWins(t *testing.T) {
	s, env := run(t, race(model.Duration("PT1H")), map[string]any{"orderId": 17})
	paid, shipped := msgWait(t, s, "paid"), msgWait(t, s, "shipped")
	flush(s)
	fire(t, s, env, "late")
	assertStatus(t, s, Completed)
	assertVars(t, s.Variables(), map[string]any{"path": "late"})
	if want := []string{paid.ID, shipped.ID}; !slices.Equal(subs(s, Unsubscribe), want) {
		t.Errorf("Unsubscribe %v, want %v", subs(s, Unsubscribe), want)
	}
	// A message that was already on its way is handed back.
	flush(s)
	apply(t, s, env, correlation(&paid, 1, nil))
	if got := effects(s, RejectMessage); len(got) != 1 || got[0].Wait != paid.ID {
		t.Errorf("RejectMessage %+v", got)
	}
}

// A timer branch already due wins as the gateway is entered: nothing is
// subscribed or scheduled.
func TestEventGatewayDueTimerWinsAtOnce(t *testing.T) {
	s, _ := run(t, race(model.Date("2020-01-01T00:00:00Z")), map[string]any{"orderId": 17})
	assertStatus(t, s, Completed)
	assertVars(t, s.Variables(), map[string]any{"path": "late"})
	for _, k := range []EffectKind{Subscribe, Unsubscribe, ScheduleTimer, CancelTimer} {
		if got := effects(s, k); len(got) != 0 {
			t.Errorf("%s effects %+v, want none", k, got)
		}
	}
}

// A branch whose key fails raises an incident on the gateway and opens
// nothing; a retry once the key is there opens every branch.
func TestEventGatewayKeyFault(t *testing.T) {
	s, env := run(t, keyFaultRace(), nil)
	inc := assertIncident(t, s, "g", `branch "paid": message "paid": correlation key "orderId"`, "is null")
	if inc.CauseClass != incidents.CauseExpression {
		t.Errorf("cause class %q", inc.CauseClass)
	}
	if got := effects(s, Subscribe); len(got) != 0 || len(effectWaits(s, ScheduleTimer)) != 1 {
		t.Fatalf("Subscribe %+v, ScheduleTimer %v: want only the other branch's timer", got, effectWaits(s, ScheduleTimer))
	}
	fire(t, s, env, "later")
	flush(s)
	apply(t, s, env, command(IncidentRetry, inc, "c1"))
	if len(subs(s, Subscribe)) != 2 || msgWait(t, s, "paid").Sub.Key != "o-1" {
		t.Fatalf("after the retry: Subscribe %v, waits %s", subs(s, Subscribe), dumpWaits(s))
	}
	correlate(t, s, env, "paid", 1, nil)
	assertStatus(t, s, Completed)
	if len(s.Incidents) != 0 {
		t.Errorf("incidents %+v, want the retried one resolved", s.Incidents)
	}
}

func keyFaultRace() *model.Builder {
	return model.NewBuilder("race").StartEvent("start").ParallelGateway("fork").EventBasedGateway("g").
		MessageCatchEvent("paid", "paid", "orderId").ReceiveTask("shipped", "shipped", "orderId").
		TimerCatchEvent("late", model.Duration("PT1H")).EndEvent("end").
		TimerCatchEvent("later", model.Duration("PT1M")).ScriptTask("set", "'o-1'", "orderId").EndEvent("end2").
		Flow("start", "fork").Flow("fork", "g").Flow("fork", "later").
		Flow("g", "paid").Flow("g", "shipped").Flow("g", "late").Flow("paid", "end").Flow("shipped", "end").Flow("late", "end").
		Sequence("later", "set", "end2")
}

// A message sent straight to the instance wins the gateway too, and the
// winner's own subscription closes.
func TestEventGatewayMessageTo(t *testing.T) {
	s, env := run(t, race(model.Duration("PT1H")), map[string]any{"orderId": 17})
	paid, shipped := msgWait(t, s, "paid"), msgWait(t, s, "shipped")
	flush(s)
	apply(t, s, env, Event{ID: "m", Kind: MessageTo, Message: "shipped"})
	assertVars(t, s.Variables(), map[string]any{"path": "shipped"})
	if want := []string{paid.ID, shipped.ID}; !slices.Equal(subs(s, Unsubscribe), want) {
		t.Errorf("Unsubscribe %v, want %v", subs(s, Unsubscribe), want)
	}
}

// A gateway entered and left in one step takes its effects back.
func TestEventGatewayClosedInTheSameStep(t *testing.T) {
	b := model.NewBuilder("same").StartEvent("start").TimerCatchEvent("wait", model.Duration("PT1M")).EventBasedGateway("g").
		MessageCatchEvent("a", "a", "'k'").TimerCatchEvent("b", model.Duration("PT1H")).EndEvent("end").
		Sequence("start", "wait", "g").Flow("g", "a").Flow("g", "b").Flow("a", "end").Flow("b", "end")
	s, env := run(t, b, nil)
	flush(s)
	w := waitAt(t, s, "wait")
	env.Now = w.Due
	apply(t, s, env, timerEvent(w), Event{ID: "c", Kind: Cancel})
	assertStatus(t, s, Terminated)
	for _, k := range []EffectKind{Subscribe, Unsubscribe, ScheduleTimer, CancelTimer} {
		if got := effects(s, k); len(got) != 0 {
			t.Errorf("%s effects %+v, want none", k, got)
		}
	}
}

// When the winner fails to complete (an output mapping), the incident is
// the winner's, at its node, and the other branches are closed all the
// same.
func TestEventGatewayWinnerFaults(t *testing.T) {
	b := model.NewBuilder("wf").StartEvent("start").EventBasedGateway("g").
		MessageCatchEvent("paid", "paid", "'k'").TimerCatchEvent("late", model.Duration("PT1H"), model.Output("x", "a + 1")).
		EndEvent("end").Flow("start", "g").Flow("g", "paid").Flow("g", "late").Flow("paid", "end").Flow("late", "end")
	s, env := run(t, b, map[string]any{"a": "text"})
	paid := msgWait(t, s, "paid")
	flush(s)
	fire(t, s, env, "late")
	assertIncident(t, s, "late", `output mapping "x"`)
	if len(s.Waits) != 0 || !slices.Equal(subs(s, Unsubscribe), []string{paid.ID}) {
		t.Errorf("waits %s, Unsubscribe %v: want the other branch closed", dumpWaits(s), subs(s, Unsubscribe))
	}
}
