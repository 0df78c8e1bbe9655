package instance

import (
	"slices"
	"strings"
	"testing"

	"github.com/jetbpm/jetbpm/engine/model"
)

func taskJS(event, src string) model.NodeOption {
	return model.ListenTask(model.Listener{Event: event, Source: src, Language: "javascript"})
}

// Task listeners run when their event happens to the task: create (and
// assignment, when the task is created with an assignee) before anyone
// sees it, update then assignment as a command changes it, complete with
// the completion's variables visible. What they change of the task is on
// its record; what they set is written.
func TestTaskListeners(t *testing.T) {
	s, env := run(t, approval(
		model.WithHuman(model.Human{CandidateGroups: `"sales"`}),
		taskJS("create", `if (amount > 500) { task.setAssignee("boss"); } task.setPriority(80); task.addCandidateUser("ada");
			execution.setVariable("trail", "create:" + task.getEventName())`),
		taskJS("assignment", `execution.setVariable("trail", trail + "|assignment:" + task.getAssignee())`),
		taskJS("update", `execution.setVariable("trail", trail + "|update:" + task.getAssignee())`),
		model.ListenTask(model.Listener{Event: "complete", Set: "decision", Source: `approved ? "yes" : "no"`}),
		model.ListenTask(model.Listener{Event: "complete", Field: "priority", Source: "10"}),
		model.ListenTask(model.Listener{Event: "complete", Set: "by", Source: `task.eventName + "@" + task.taskDefinitionKey`}),
	), map[string]any{"amount": 900})
	task := openTask(t, s, "review")
	rec := record(t, s, task.ID)
	if rec.Assignee != "boss" || rec.State != TaskAssigned || rec.Priority != 80 ||
		!slices.Equal(rec.CandidateUsers, []string{"ada"}) || !slices.Equal(rec.CandidateGroups, []string{"sales"}) {
		t.Fatalf("created record %+v", rec)
	}
	if got := taskFacts(s); !slices.Equal(got, []string{"created:" + task.ID, "assigned:" + task.ID}) {
		t.Errorf("facts %v", got)
	}
	assertVars(t, s.Variables(), map[string]any{"trail": "create:create|assignment:boss"})

	flush(s)
	apply(t, s, env, taskCmd("c1", task.ID, TaskAssign, "carol"))
	assertVars(t, s.Variables(), map[string]any{"trail": "create:create|assignment:boss|update:carol|assignment:carol"})
	apply(t, s, env, taskCmd("c2", task.ID, TaskUnclaim, ""))
	assertVars(t, s.Variables(), map[string]any{"trail": "create:create|assignment:boss|update:carol|assignment:carol|update:null"})

	ev := taskCmd("c3", task.ID, TaskComplete, "carol")
	ev.Task.Vars = map[string]any{"approved": true}
	flush(s)
	apply(t, s, env, ev)
	if o := lastOutcome(t, record(t, s, task.ID), "c3"); !o.OK {
		t.Fatalf("complete: %+v", o)
	}
	assertStatus(t, s, Completed)
	assertVars(t, s.Variables(), map[string]any{"decision": "yes", "approved": true, "by": "complete@review"})
	if rec := record(t, s, task.ID); rec.State != TaskCompleted || rec.Priority != 10 {
		t.Errorf("completed record %+v", rec)
	}
}

// A command whose listener fails is refused with the listener's error and
// changes nothing — not the task, not a variable; a create listener that
// fails is an incident at the task, before anyone sees it.
func TestTaskListenerFailures(t *testing.T) {
	s, env := run(t, approval(
		taskJS("assignment", `execution.setVariable("assigned", true); if (task.getAssignee() === "mallory") { throw new Error("not mallory"); }`),
		taskJS("complete", `execution.setVariable("checked", true); if (!approved) { throw new Error("approve it first"); }`),
	), nil)
	id := openTask(t, s, "review").ID
	flush(s)
	apply(t, s, env, taskCmd("c1", id, TaskClaim, "mallory"))
	rec := record(t, s, id)
	if o := lastOutcome(t, rec, "c1"); o.OK || o.Reason != `assignment task listener 1: script "review/task/listener-1" line 1:88: Error: not mallory` {
		t.Fatalf("claim by mallory: %+v", o)
	}
	if rec.Assignee != "" || rec.State != TaskCreated || len(taskFacts(s)) != 0 {
		t.Fatalf("the refused claim changed the task: %+v, facts %v", rec, taskFacts(s))
	}
	assertNoVar(t, s.Variables(), "assigned")

	flush(s)
	ev := taskCmd("c2", id, TaskComplete, "")
	ev.Task.Vars = map[string]any{"approved": false}
	apply(t, s, env, ev)
	if o := lastOutcome(t, record(t, s, id), "c2"); o.OK || o.Reason == "" {
		t.Fatalf("complete without approval: %+v", o)
	}
	assertStatus(t, s, Active)
	assertNoVar(t, s.Variables(), "checked", "approved")

	s, _ = run(t, approval(taskJS("create", `task.setPriority(500)`)), nil)
	assertIncident(t, s, "review", "create task listener 1", "setPriority: want a whole number from 0 to 100")
	if len(records(s)) != 0 {
		t.Errorf("a task whose create listener failed was published: %+v", records(s))
	}
}

// A delete task listener runs when the task is canceled: what it sets is
// written; its failure stays on the canceled record, the cancellation
// stands.
func TestDeleteTaskListener(t *testing.T) {
	for _, tc := range []struct {
		name, source, wantErr string
		wantVar               any
	}{
		{"sets", `"cleaned"`, "", "cleaned"},
		{"fails", `missing + 1`, "delete task listener 1", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := approval(model.ListenTask(model.Listener{Event: model.ListenDelete, Source: tc.source, Set: "cleanup"})).
				TimerBoundary("late", "review", model.Duration("PT1H"), true).EndEvent("gone").Sequence("late", "gone")
			env := newEnv(build(t, b), nil)
			s := start(t, env, nil)
			task := openTask(t, s, "review")
			flush(s)
			fire(t, s, env, "late")
			rec := record(t, s, task.ID)
			if rec.State != TaskCanceled || !strings.Contains(rec.ListenerError, tc.wantErr) || (tc.wantErr == "") != (rec.ListenerError == "") {
				t.Fatalf("record %+v, want canceled with listener error %q", rec, tc.wantErr)
			}
			assertStatus(t, s, Completed)
			if got := s.Variables()["cleanup"]; got != tc.wantVar {
				t.Errorf("cleanup = %v, want %v", got, tc.wantVar)
			}
		})
	}
}
