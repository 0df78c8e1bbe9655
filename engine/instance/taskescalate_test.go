package instance

import (
	"slices"
	"strings"
	"testing"

	"github.com/jetbpm/jetbpm/engine/model"
)

func escalateCmd(id, task, code string, vars map[string]any) Event {
	return Event{ID: id, Kind: UserTaskCommand, Task: &TaskCommand{Task: task, Op: TaskEscalate, User: "ann", EscalationCode: code, Vars: vars}}
}

// escalatable is approval's review task with an escalation boundary for
// code "late" (interrupting or not) to a task "inform".
func escalatable(interrupting bool) *model.Builder {
	return approval().EscalationBoundary("esc", "review", "late", interrupting).
		UserTask("inform").EndEvent("informed").Sequence("esc", "inform", "informed")
}

// An interrupting escalation boundary on a user task: the escalate command
// sets its variables, lists its outcome on the task's record, which ends
// canceled, and publishes escalated then canceled facts; the boundary's
// path runs.
func TestTaskEscalateInterrupting(t *testing.T) {
	s, env := run(t, escalatable(true), nil)
	id := openTask(t, s, "review").ID
	flush(s)
	if n := apply(t, s, env, escalateCmd("c1", id, "late", map[string]any{"reason": "sender"})); n != 1 {
		t.Fatalf("applied %d", n)
	}
	rec := record(t, s, id)
	if o := lastOutcome(t, rec, "c1"); !o.OK || o.Op != TaskEscalate || rec.State != TaskCanceled {
		t.Fatalf("record %+v outcome %+v", rec, o)
	}
	if got := taskFacts(s); len(got) < 2 || got[0] != "escalated:"+id || got[1] != "canceled:"+id {
		t.Fatalf("facts %v", got)
	}
	if f := effects(s, PublishTaskFact)[0].TaskFact; f.EscalationCode != "late" || f.User != "ann" {
		t.Errorf("escalated fact %+v", f)
	}
	assertVars(t, s.Variables(), map[string]any{"reason": "sender"})
	openTask(t, s, "inform")
	if slices.ContainsFunc(s.Waits, func(w *Wait) bool { return w.Node == "review" }) {
		t.Errorf("review still waits: %s", dumpWaits(s))
	}
}

// A non-interrupting one starts its path beside the task, which stays
// open and can be escalated again.
func TestTaskEscalateNonInterrupting(t *testing.T) {
	s, env := run(t, escalatable(false), nil)
	id := openTask(t, s, "review").ID
	apply(t, s, env, escalateCmd("c1", id, "late", nil))
	apply(t, s, env, escalateCmd("c2", id, "late", nil))
	if n := apply(t, s, env, escalateCmd("c2", id, "late", nil)); n != 0 {
		t.Fatalf("a repeated command was applied again")
	}
	if got := openTask(t, s, "review"); got.State.Finished() || len(got.Outcomes) != 2 {
		t.Fatalf("review %+v", got)
	}
	informs := 0
	for _, w := range s.Waits {
		if w.Node == "inform" {
			informs++
		}
	}
	if informs != 2 {
		t.Fatalf("inform tasks %d, want 2: %s", informs, dumpWaits(s))
	}
}

// An escalation nothing catches is refused, as Camunda 7's
// handleEscalation throws: nothing changes but the outcome on the record.
// An escalation event sub-process of the process catches one raised from
// a task without a boundary.
func TestTaskEscalateUncaughtAndEventSub(t *testing.T) {
	s, env := run(t, escalatable(true), nil)
	id := openTask(t, s, "review").ID
	flush(s)
	apply(t, s, env, escalateCmd("c1", id, "other", map[string]any{"x": 1}))
	rec := record(t, s, id)
	if o := lastOutcome(t, rec, "c1"); o.OK || !strings.Contains(o.Reason, `escalation "other" from task `+id+" is not caught") {
		t.Fatalf("outcome %+v", o)
	}
	assertNoVar(t, s.Variables(), "x")
	if len(taskFacts(s)) != 0 || rec.State.Finished() {
		t.Fatalf("facts %v, record %+v", taskFacts(s), rec)
	}
	flush(s)
	apply(t, s, env, escalateCmd("c2", id, "", nil))
	if o := lastOutcome(t, record(t, s, id), "c2"); o.OK || o.Reason != "escalate names no escalation code" {
		t.Fatalf("outcome %+v", o)
	}

	b := approval()
	b.EventSubProcess("escEsp", false).EscalationStartEvent("caught", "").
		ScriptTask("mark", "true", "escalated").EndEvent("escEnd").Sequence("caught", "mark", "escEnd")
	s, env = run(t, b, nil)
	id = openTask(t, s, "review").ID
	apply(t, s, env, escalateCmd("c1", id, "any", nil))
	assertVars(t, s.Variables(), map[string]any{"escalated": true})
	if got := openTask(t, s, "review"); got.State.Finished() {
		t.Fatalf("review %+v", got)
	}
}
