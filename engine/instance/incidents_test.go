package instance

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/jetbpm/jetbpm/engine/model"
	"github.com/jetbpm/jetbpm/incidents"
	"github.com/jetbpm/jetbpm/jobs"
)

// flaky is an operation that fails while *down is true.
func flaky(down *bool) opFunc {
	return func(context.Context, Call) (map[string]any, error) {
		if *down {
			return nil, errors.New("down")
		}
		return map[string]any{"done": true}, nil
	}
}

func command(kind EventKind, inc *Incident, id string) Event {
	return Event{ID: id, Kind: kind, Incident: inc.ID}
}

func historyKinds(inc *Incident) []incidents.Kind {
	var out []incidents.Kind
	for _, h := range inc.History {
		out = append(out, h.Kind)
	}
	return out
}

// An in-process activity fails within its step, before any wait could arm
// its boundaries: they are armed when the incident is raised, counted from
// the node's entry, so the SLA keeps ticking over the stuck token;
// the interrupting one then overtakes the incident.
func TestInProcessIncidentKeepsBoundariesArmed(t *testing.T) {
	down := true
	x := newExec(map[string]opFunc{"op": flaky(&down)})
	b := model.NewBuilder("p").StartEvent("s").ServiceTask("a", "op").EndEvent("e").Sequence("s", "a", "e").
		TimerBoundary("sla", "a", model.Duration("PT10M"), true).ScriptTask("late", `"late"`, "path").EndEvent("e2").
		Sequence("sla", "late", "e2").
		TimerBoundary("remind", "a", model.Duration("PT1M"), false).ScriptTask("nudge", `true`, "reminded").EndEvent("e3").
		Sequence("remind", "nudge", "e3")
	env := newEnv(build(t, b), x)
	s := start(t, env, nil)
	inc := assertIncident(t, s, "a", "down")
	if w := waitAt(t, s, "sla"); !w.Due.Equal(t0.Add(10*time.Minute)) || w.Kind != BoundaryWait {
		t.Fatalf("sla wait %+v, want a boundary wait due 10 minutes after entry", w)
	}

	// A retry that fails again keeps the same waits: the clock is not reset.
	env.Now = t0.Add(30 * time.Second)
	apply(t, s, env, command(IncidentRetry, inc, "c1"))
	inc = assertIncident(t, s, "a", "down")
	if w := waitAt(t, s, "sla"); !w.Due.Equal(t0.Add(10*time.Minute)) || w.Track != inc.Track {
		t.Fatalf("after a failed retry the sla wait is %+v, want the first entry's, on track %s", w, inc.Track)
	}

	// The non-interrupting reminder fires; the incident stays.
	fire(t, s, env, "remind")
	inc = assertIncident(t, s, "a")
	assertVars(t, s.Variables(), map[string]any{"reminded": true})

	// The interrupting SLA overtakes the incident.
	flush(s)
	fire(t, s, env, "sla")
	assertStatus(t, s, Completed)
	assertVars(t, s.Variables(), map[string]any{"path": "late"})
	if len(s.Incidents) != 0 {
		t.Fatalf("incidents %+v, want the overtaken one closed", s.Incidents)
	}
	var closed *incidents.Record
	for _, e := range effects(s, PutIncident) {
		closed = e.Incident
	}
	if closed == nil || closed.ID != inc.ID || closed.State != incidents.Overtaken ||
		!slices.Equal(historyKinds(&Incident{Record: *closed}), []incidents.Kind{incidents.Raised, incidents.Retried, incidents.Raised, incidents.OvertakenKind}) {
		t.Fatalf("last record %+v, want %s overtaken", closed, inc.ID)
	}
}

// A retry of an in-process activity that succeeds leaves the node with no
// mark: the next activity arms its own boundaries.
func TestRetryMarkDoesNotOutliveTheNode(t *testing.T) {
	down := true
	x := newExec(map[string]opFunc{"op": flaky(&down)})
	b := model.NewBuilder("p").StartEvent("s").ServiceTask("a", "op").
		ServiceTask("ext", "", model.WithWorker("t")).EndEvent("e").Sequence("s", "a", "ext", "e").
		TimerBoundary("sla", "ext", model.Duration("PT1H"), true).EndEvent("late").Sequence("sla", "late")
	env := newEnv(build(t, b), x)
	s := start(t, env, nil)
	inc := assertIncident(t, s, "a")
	down = false
	env.Now = t0.Add(time.Minute)
	apply(t, s, env, command(IncidentRetry, inc, "c1"))
	if got := s.ActiveNodes(); !slices.Equal(got, []string{"ext"}) {
		t.Fatalf("active nodes %v, want the retried track at ext", got)
	}
	if w := waitAt(t, s, "sla"); !w.Due.Equal(env.Now.Add(time.Hour)) {
		t.Fatalf("sla wait %+v, want armed when ext was entered", w)
	}
	for _, tr := range s.Tracks {
		if tr.Node != "ext" && tr.BoundariesArmed {
			t.Errorf("track %+v keeps a node's boundary mark past the node", tr)
		}
	}
}

// A retried external task re-enters with its boundaries kept, not re-armed,
// and a new job (a new activation, so a new id and a fresh budget).
func TestExternalRetryKeepsBoundariesAndEnqueuesANewJob(t *testing.T) {
	b := model.NewBuilder("p").StartEvent("s").ServiceTask("ext", "", model.WithWorker("t")).EndEvent("e").Sequence("s", "ext", "e").
		TimerBoundary("sla", "ext", model.Duration("PT1H"), true).EndEvent("late").Sequence("sla", "late")
	env := newEnv(build(t, b), nil)
	s := start(t, env, nil)
	job := waitAt(t, s, "ext")
	sla := *waitAt(t, s, "sla")
	env.Now = t0.Add(time.Minute)
	apply(t, s, env, Event{ID: "o1", Kind: JobOutcome, Wait: job.ID, Outcome: &jobs.Terminal{Kind: jobs.Failed, Message: "retries exhausted"}})
	inc := assertIncident(t, s, "ext", "retries exhausted")
	flush(s)
	env.Now = t0.Add(2 * time.Minute)
	apply(t, s, env, command(IncidentRetry, inc, "c1"))
	again := waitAt(t, s, "ext")
	if again.ID == job.ID {
		t.Fatalf("the retry reuses job %s", job.ID)
	}
	if got := effectWaits(s, EnqueueJob); !slices.Equal(got, []string{again.ID}) {
		t.Fatalf("enqueued %v, want the new job %s", got, again.ID)
	}
	if w := waitAt(t, s, "sla"); w.ID != sla.ID || !w.Due.Equal(sla.Due) || len(effects(s, ScheduleTimer)) != 0 {
		t.Fatalf("sla wait %+v (timers scheduled %v), want the first entry's %+v kept", w, effectWaits(s, ScheduleTimer), sla)
	}
}

// An external task whose input mapping fails never parks on its job, so
// its boundaries are armed at the raise, from its entry; retries that fail
// the same way keep those waits and arm nothing again.
func TestInputFailureArmsBoundariesOnce(t *testing.T) {
	b := model.NewBuilder("p").StartEvent("s").ServiceTask("ext", "", model.WithWorker("t"), model.Input("twice", "amount * 2")).
		EndEvent("e").Sequence("s", "ext", "e").
		TimerBoundary("sla", "ext", model.Duration("PT1H"), true).EndEvent("late").Sequence("sla", "late")
	env := newEnv(build(t, b), nil)
	s := start(t, env, map[string]any{"amount": "ten"})
	inc := assertIncident(t, s, "ext", "input mapping")
	sla := *waitAt(t, s, "sla")
	if !sla.Due.Equal(t0.Add(time.Hour)) {
		t.Fatalf("sla wait %+v, want due an hour after ext was entered", sla)
	}
	flush(s)
	for i := range 2 {
		env.Now = t0.Add(time.Duration(i+1) * time.Minute)
		apply(t, s, env, command(IncidentRetry, inc, fmt.Sprintf("c%d", i)))
		assertIncident(t, s, "ext", "input mapping")
		if w := waitAt(t, s, "sla"); w.ID != sla.ID || !w.Due.Equal(sla.Due) || len(effects(s, ScheduleTimer)) != 0 {
			t.Fatalf("retry %d: sla wait %+v (timers scheduled %v), want the first raise's %+v kept", i+1, w, effectWaits(s, ScheduleTimer), sla)
		}
		flush(s)
	}
}

// A retried track that gets past its node and fails at a later one raises
// a new incident there; the first one is closed, not re-raised at the
// wrong node.
func TestRetriedTrackFailingLaterRaisesANewIncident(t *testing.T) {
	downA, downB := true, true
	x := newExec(map[string]opFunc{"a": flaky(&downA), "b": flaky(&downB)})
	b := model.NewBuilder("p").StartEvent("s").ServiceTask("a", "a").ServiceTask("b", "b").EndEvent("e").Sequence("s", "a", "b", "e")
	env := newEnv(build(t, b), x)
	s := start(t, env, nil)
	first := assertIncident(t, s, "a")
	firstID := first.ID
	downA = false
	flush(s)
	apply(t, s, env, command(IncidentRetry, first, "c1"))
	second := assertIncident(t, s, "b")
	if second.ID == firstID || second.Attempts != 1 || len(s.Incidents) != 1 {
		t.Fatalf("incidents %+v, want one new incident on b", s.Incidents)
	}
	var rec *incidents.Record
	for _, e := range effects(s, PutIncident) {
		if e.Incident.ID == firstID {
			rec = e.Incident
		}
	}
	if rec == nil || rec.State != incidents.Resolved || rec.Node != "a" || rec.Attempts != 1 {
		t.Fatalf("record of %s = %+v, want it resolved at a", firstID, rec)
	}
}

// Once a retry succeeds the incident is closed: the record must not stay
// open on an instance that has moved on. The step has no hook where a
// retried track leaves its node yet (reported); until it has, this test
// documents the gap and skips.
func TestSuccessfulRetryClosesTheIncident(t *testing.T) {
	down := true
	x := newExec(map[string]opFunc{"op": flaky(&down)})
	b := model.NewBuilder("p").StartEvent("s").ServiceTask("a", "op").
		TimerCatchEvent("w", model.Duration("PT1H")).EndEvent("e").Sequence("s", "a", "w", "e")
	env := newEnv(build(t, b), x)
	s := start(t, env, nil)
	inc := assertIncident(t, s, "a")
	down = false
	apply(t, s, env, command(IncidentRetry, inc, "c1"))
	if got := s.ActiveNodes(); !slices.Equal(got, []string{"w"}) {
		t.Fatalf("active nodes %v, want w after the successful retry", got)
	}
	if len(s.Incidents) != 0 {
		t.Fatalf("a successful retry left incident %s open after its track moved on to %v", inc.ID, s.ActiveNodes())
	}
	var closed bool
	for _, e := range s.Outbox {
		closed = closed || e.Kind == PutIncident && e.Incident.ID == inc.ID && e.Incident.State == "resolved"
	}
	if !closed {
		t.Fatal("the incident's record was not written as resolved")
	}
}
