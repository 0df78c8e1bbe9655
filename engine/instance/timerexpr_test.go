package instance

import (
	"testing"
	"time"

	"github.com/jetbpm/jetbpm/engine/model"
	"github.com/jetbpm/jetbpm/incidents"
)

// A timer whose value is an expression is evaluated when it is armed, over
// the variables its node sees, and each instance gets its own due time.
func TestTimerExpressionCatch(t *testing.T) {
	b := func() *model.Builder {
		return model.NewBuilder("remind").StartEvent("start").
			TimerCatchEvent("wait", model.TimerExpr(model.TimerDuration, "=reminderDelay")).EndEvent("end").
			Sequence("start", "wait", "end")
	}
	for _, delay := range []string{"PT5M", "P1D"} {
		s, env := run(t, b(), map[string]any{"reminderDelay": delay})
		w := waitAt(t, s, "wait")
		p, _ := model.ParsePeriod(delay)
		if want := p.AddTo(env.Now); !w.Due.Equal(want) || w.Timer != delay {
			t.Fatalf("%s: wait due %v (value %q), want %v", delay, w.Due, w.Timer, want)
		}
		fire(t, s, env, "wait")
		assertStatus(t, s, Completed)
	}

	// A value that is no duration, or no string, is an expression incident
	// on the catch.
	for msg, vars := range map[string]map[string]any{
		`duration "soon" is not ISO-8601`: {"reminderDelay": "soon"},
		`gave 5 (int64)`:                  {"reminderDelay": 5},
		`gave <nil> (<nil>)`:              nil,
	} {
		s, _ := run(t, b(), vars)
		if inc := assertIncident(t, s, "wait", `timer duration "=reminderDelay"`, msg); inc.CauseClass != incidents.CauseExpression {
			t.Errorf("cause class %q, want %q", inc.CauseClass, incidents.CauseExpression)
		}
	}
}

// A timer boundary's expression (Camunda 7 text with ${...}) is evaluated
// when the activity is entered; a repeating one keeps the value it
// resolved to for every firing.
func TestTimerExpressionBoundaryCycle(t *testing.T) {
	b := model.NewBuilder("sla").StartEvent("start").ServiceTask("work", "", model.WithWorker("w")).EndEvent("end").
		TimerBoundary("nag", "work", model.TimerExpr(model.TimerCycle, `"R2/PT" + string(minutes) + "M"`), false).
		ScriptTask("count", "(nags ?? 0) + 1", "nags").EndEvent("nagged").
		Sequence("start", "work", "end").Sequence("nag", "count", "nagged")
	s, env := run(t, b, map[string]any{"minutes": 10})
	w := waitAt(t, s, "nag")
	if w.Timer != "R2/PT10M" || !w.Due.Equal(env.Now.Add(10*time.Minute)) {
		t.Fatalf("boundary wait %+v", w)
	}
	// A later change of the variable does not move the armed cycle.
	apply(t, s, env, Event{ID: "v1", Kind: SetVars, Vars: map[string]any{"minutes": 1}})
	first := fire(t, s, env, "nag")
	second := waitAt(t, s, "nag")
	if second.Timer != "R2/PT10M" || !second.Due.Equal(first.Due.Add(10*time.Minute)) {
		t.Fatalf("second firing %+v after %v", second, first.Due)
	}
	fire(t, s, env, "nag")
	assertVars(t, s.Variables(), map[string]any{"nags": int64(2), "minutes": int64(1)})

	// An expression that fails faults the activity before it parks.
	s, _ = run(t, b, map[string]any{"minutes": "ten"})
	assertIncident(t, s, "work", `timer boundary "nag"`, `gave "R2/PTtenM"`)
}

// An event-based gateway's timer branch and an event sub-process's timer
// start evaluate their expressions when the gateway is entered and the
// scope starts.
func TestTimerExpressionGatewayAndEventSub(t *testing.T) {
	b := model.NewBuilder("race").StartEvent("start").EventBasedGateway("g").
		MessageCatchEvent("paid", "paid", "orderId").EndEvent("end").
		TimerCatchEvent("late", model.TimerExpr(model.TimerDate, "=deadline")).EndEvent("lateEnd").
		Flow("start", "g").Flow("g", "paid").Flow("g", "late").Flow("paid", "end").Flow("late", "lateEnd")
	b.EventSubProcess("timeout", true).TimerStartEvent("ts", model.TimerExpr(model.TimerDuration, "=limit")).
		EndEvent("te").Flow("ts", "te")
	s, _ := run(t, b, map[string]any{"orderId": 1, "deadline": "2030-01-01T00:00:00Z", "limit": "PT2H"})
	if w := waitAt(t, s, "late"); w.Timer != "2030-01-01T00:00:00Z" || !w.Due.Equal(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)) {
		t.Fatalf("gateway timer %+v", w)
	}
	if w := waitAt(t, s, "ts"); w.Timer != "PT2H" {
		t.Fatalf("event sub-process timer %+v", w)
	}

	s, _ = run(t, b, map[string]any{"orderId": 1, "deadline": "tomorrow", "limit": "PT2H"})
	assertIncident(t, s, "g", `branch "late"`, `timer date "=deadline" gave "tomorrow"`)
}
