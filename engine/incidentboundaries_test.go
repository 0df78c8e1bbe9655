package engine_test

// Incidents and the timer boundaries of the activity holding them.

import (
	"slices"
	"testing"

	"github.com/jetbpm/jetbpm/engine"
	"github.com/jetbpm/jetbpm/engine/instance"
	"github.com/jetbpm/jetbpm/engine/model"
	"github.com/jetbpm/jetbpm/incidents"
	"github.com/jetbpm/jetbpm/jobs"
	"github.com/jetbpm/jetbpm/streams/streamstest"
)

// boundaryProcess deploys start → external task "work" (topic, no job
// retries) → end, with a timer boundary "timer" (dur, interrupting or not)
// leading to a script that sets path=name.
func boundaryProcess(t *testing.T, eng *engine.Engine, id, topic, dur string, interrupting bool) {
	t.Helper()
	deployed(t, eng, model.NewBuilder(id).StartEvent("s").
		ServiceTask("work", "", model.WithWorker(topic, model.WithRetryPolicy(jobs.NoRetrySpec()))).EndEvent("e").
		TimerBoundary("timer", "work", model.Duration(dur), interrupting).ScriptTask("mark", `"timer"`, "path").EndEvent("e2").
		Sequence("s", "work", "e").Sequence("timer", "mark", "e2"))
}

// failJob fetches one job and fails it: with no retries, the incident.
func failJob(t *testing.T, w *rawWorker) jobs.Job {
	t.Helper()
	m, job := w.fetch()
	if v := w.report(m, job, jobs.Report{Kind: jobs.Fail, Code: "500", Message: "crashed"}); !v.Accepted {
		t.Fatalf("fail refused: %+v", v)
	}
	return job
}

// An interrupting timer boundary armed before the failure fires over the
// incident: the node is cancelled and the incident closed as overtaken.
func TestInterruptingBoundaryOvertakesIncident(t *testing.T) {
	t.Parallel()
	env := streamstest.Start(t)
	eng := openEngine(t, env, nil)
	boundaryProcess(t, eng, "sla", "sla", "PT3S", true)
	w := newRawWorker(t, env, "sla")
	id := startJob(t, eng, "sla", nil)
	failJob(t, w)
	_, inc := waitIncident(t, eng, id) // raised before the timer fired
	awaitRecord(t, env, inc.ID, kindsAre(incidents.Raised))
	v := waitDone(t, eng, id)
	if v.Status != instance.Completed || v.Variables["path"] != "timer" || len(v.Incidents) != 0 {
		t.Fatalf("%+v, want completed through the boundary", v)
	}
	rec := awaitRecord(t, env, inc.ID, func(r *incidents.Record) bool { return r.State.Closed() })
	if rec.State != incidents.Overtaken || !slices.Equal(recordKinds(rec), []incidents.Kind{incidents.Raised, incidents.OvertakenKind}) {
		t.Fatalf("record %+v, want overtaken", rec)
	}
	facts := replayIncidentFacts(t, env, "sla", 2)
	if facts[1].Kind != incidents.OvertakenKind || facts[1].Incident != inc.ID || facts[1].Seq != 2 {
		t.Fatalf("facts %+v, want the overtaken fact as seq 2", facts)
	}
}

// A non-interrupting timer boundary fires while the incident is open: its
// path runs and the incident stays; resolving it then completes.
func TestNonInterruptingBoundaryFiresDuringIncident(t *testing.T) {
	t.Parallel()
	env := streamstest.Start(t)
	eng := openEngine(t, env, nil)
	boundaryProcess(t, eng, "remind", "remind", "PT2S", false)
	w := newRawWorker(t, env, "remind")
	id := startJob(t, eng, "remind", nil)
	failJob(t, w)
	_, inc := waitIncident(t, eng, id)
	v := awaitView(t, eng, id, "ran the reminder", func(v *engine.InstanceView) bool { return v.Variables["path"] != nil })
	if v.Status != engine.StatusIncident || v.Variables["path"] != "timer" || !slices.Equal(v.ActiveNodes, []string{"work"}) ||
		len(v.Incidents) != 1 || v.Incidents[0].ID != inc.ID {
		t.Fatalf("%+v, want the reminder run and the incident still open on work", v)
	}
	if r, err := eng.Incident(bounded(t), inc.ID); err != nil || r.State != incidents.Open || !slices.Equal(recordKinds(r.Record), []incidents.Kind{incidents.Raised}) {
		t.Fatalf("record %+v, %v; want open, only raised", r, err)
	}
	if err := eng.ResolveIncident(bounded(t), inc.ID, map[string]any{"resolved": true}); err != nil {
		t.Fatal(err)
	}
	if v := waitDone(t, eng, id); v.Status != instance.Completed || v.Variables["resolved"] != true {
		t.Fatalf("%+v", v)
	}
}

// An activity whose input mapping fails holds an incident before it could
// arm its boundaries on entry: they are armed at the raise, counted from
// the entry, so an SLA timer still fires over the stuck token.
func TestBoundaryArmedWhenInputMappingFails(t *testing.T) {
	t.Parallel()
	env := streamstest.Start(t)
	eng := openEngine(t, env, nil)
	deployed(t, eng, model.NewBuilder("gated").StartEvent("s").
		ServiceTask("work", "", model.WithWorker("gated"), model.Input("twice", "amount * 2")).EndEvent("e").
		TimerBoundary("timer", "work", model.Duration("PT2S"), true).ScriptTask("mark", `"timer"`, "path").EndEvent("e2").
		Sequence("s", "work", "e").Sequence("timer", "mark", "e2"))
	id := startJob(t, eng, "gated", map[string]any{"amount": "ten"})
	_, inc := waitIncident(t, eng, id)
	if inc.CauseClass != incidents.CauseExpression || inc.Node != "work" {
		t.Fatalf("incident %+v, want an expression incident on work", inc)
	}
	if v := waitDone(t, eng, id); v.Status != instance.Completed || v.Variables["path"] != "timer" {
		t.Fatalf("%+v, want completed through the timer boundary", v)
	}
	rec := awaitRecord(t, env, inc.ID, func(r *incidents.Record) bool { return r.State.Closed() })
	if rec.State != incidents.Overtaken {
		t.Fatalf("record %+v, want overtaken", rec)
	}
}
