package instance

import (
	"strings"
	"testing"

	"github.com/jetbpm/jetbpm/engine/model"
	"github.com/jetbpm/jetbpm/jobs"
)

// listenerJobAt is the job wait of a task listener at node, and the job
// queued for it in this step.
func listenerJobAt(t *testing.T, s *State, node, topic string) (*Wait, *jobs.Job) {
	t.Helper()
	var found *Wait
	for _, w := range s.Waits {
		if w.Node == node && w.Kind == JobWait && w.Listener != nil {
			if found != nil {
				t.Fatalf("two listener waits at %s: %s", node, dumpWaits(s))
			}
			found = w
		}
	}
	if found == nil || found.Job.Topic != topic {
		t.Fatalf("listener wait at %s = %+v, want one on topic %s (waits: %s)", node, found, topic, dumpWaits(s))
	}
	return found, enqueued(t, s, found)
}

func listenerResult(w *Wait, res *jobs.TaskResult) Event {
	return Event{ID: "done:" + w.ID, Kind: JobOutcome, Wait: w.ID, Outcome: &jobs.Terminal{Kind: jobs.Done, Result: res}}
}

// userTaskWait is the user task wait at node.
func userTaskWait(t *testing.T, s *State, node string) *Wait {
	t.Helper()
	for _, w := range s.Waits {
		if w.Node == node && w.Kind == UserTaskWait {
			return w
		}
	}
	t.Fatalf("no user task wait at %s: %s", node, dumpWaits(s))
	return nil
}

// Zeebe's task listeners: creating before the task opens (its
// corrections in the opened task); assigning before a claim takes effect,
// whose correction wins; other commands refused while one waits; a
// completing listener that denies refuses the completion, one that fails
// refuses it naming the failure, and when all accept the task completes.
func TestTaskJobListeners(t *testing.T) {
	b := approval(
		model.ListenTaskJob(model.JobListener{Event: model.ListenCreating, Type: "enrich"}),
		model.ListenTaskJob(model.JobListener{Event: model.ListenAssigning, Type: "policy"}),
		model.ListenTaskJob(model.JobListener{Event: model.ListenCompleting, Type: "check", Retries: 1}),
		model.ListenTaskJob(model.JobListener{Event: model.ListenCompleting, Type: "four-eyes"}))
	env := newEnv(build(t, b), nil)
	s := start(t, env, map[string]any{"amount": 7})

	w, job := listenerJobAt(t, s, "review", "enrich")
	if len(records(s)) != 0 || job.Headers[HeaderEventType] != "creating" || job.Input["amount"] != int64(7) {
		t.Fatalf("creating: records %v, job %+v: want no record yet, the variables and the event", records(s), job)
	}
	flush(s)
	sales := []string{"sales"}
	apply(t, s, env, listenerResult(w, &jobs.TaskResult{Corrections: &jobs.TaskCorrections{CandidateGroups: &sales}}))
	task := openTask(t, s, "review")
	if len(task.CandidateGroups) != 1 || task.CandidateGroups[0] != "sales" || task.Pending != nil {
		t.Fatalf("opened task %+v, want the creating listener's candidate group", task)
	}
	flush(s)

	apply(t, s, env, taskCmd("c1", task.ID, TaskClaim, "ann"))
	w, job = listenerJobAt(t, s, "review", "policy")
	if rec := record(t, s, task.ID); rec.Pending == nil || rec.Pending.Event != "assigning" || rec.Assignee != "" || len(rec.Outcomes) != 0 {
		t.Fatalf("claim pending: record %+v (pending %+v)", rec, rec.Pending)
	}
	if job.Headers[HeaderAssignee] != "ann" || job.Headers[HeaderAction] != "claim" || job.Headers[HeaderUserTaskKey] != task.ID {
		t.Fatalf("assigning job headers %v", job.Headers)
	}
	flush(s)
	apply(t, s, env, taskCmd("c2", task.ID, TaskComplete, "ann"))
	if o := lastOutcome(t, record(t, s, task.ID), "c2"); o.OK || !strings.Contains(o.Reason, `is assigning: its claim waits for task listener 2 (job type "policy")`) {
		t.Fatalf("a command while one waits: %+v", o)
	}
	flush(s)
	bob := "bob"
	apply(t, s, env, listenerResult(w, &jobs.TaskResult{Corrections: &jobs.TaskCorrections{Assignee: &bob}}))
	rec := record(t, s, task.ID)
	if o := lastOutcome(t, rec, "c1"); !o.OK || rec.Assignee != "bob" || rec.State != TaskAssigned || rec.Pending != nil {
		t.Fatalf("claim applied: %+v (outcome %+v), want it assigned to bob, the listener's correction", rec, o)
	}
	flush(s)

	complete := func(id string) {
		cmd := taskCmd(id, task.ID, TaskComplete, "bob")
		cmd.Task.Vars = map[string]any{"ok": true}
		apply(t, s, env, cmd)
	}
	complete("c3")
	w, _ = listenerJobAt(t, s, "review", "check")
	apply(t, s, env, listenerResult(w, nil))
	w, _ = listenerJobAt(t, s, "review", "four-eyes")
	flush(s)
	apply(t, s, env, listenerResult(w, &jobs.TaskResult{Denied: true, DeniedReason: "a second pair of eyes first"}))
	rec = record(t, s, task.ID)
	if o := lastOutcome(t, rec, "c3"); o.OK || o.Reason != `task listener 4 (completing, job type "four-eyes") denied it: a second pair of eyes first` || rec.State != TaskAssigned {
		t.Fatalf("denied: %+v (outcome %+v)", rec, o)
	}
	flush(s)

	complete("c4")
	w, _ = listenerJobAt(t, s, "review", "check")
	flush(s)
	apply(t, s, env, Event{ID: "f", Kind: JobOutcome, Wait: w.ID, Outcome: &jobs.Terminal{Kind: jobs.Failed, Message: "rules engine down"}})
	if o := lastOutcome(t, record(t, s, task.ID), "c4"); o.OK || o.Reason != `task listener 3 (completing, job type "check") failed: rules engine down` {
		t.Fatalf("failed listener: %+v", o)
	}
	flush(s)

	complete("c5")
	w, _ = listenerJobAt(t, s, "review", "check")
	apply(t, s, env, listenerResult(w, nil))
	w, _ = listenerJobAt(t, s, "review", "four-eyes")
	flush(s)
	apply(t, s, env, listenerResult(w, nil))
	if o := lastOutcome(t, record(t, s, task.ID), "c5"); !o.OK {
		t.Fatalf("completion: %+v", o)
	}
	assertStatus(t, s, Completed)
	assertVars(t, s.Variables(), map[string]any{"amount": int64(7), "ok": true})
}

// An update waits for the updating listeners, whose corrections win over
// what it sets; a creating listener that fails is an incident at the
// task, whose retry opens the task anew.
func TestTaskJobListenerUpdatesAndFailures(t *testing.T) {
	b := approval(
		model.ListenTaskJob(model.JobListener{Event: model.ListenCreating, Type: "enrich", Retries: 1}),
		model.ListenTaskJob(model.JobListener{Event: model.ListenUpdating, Type: "clamp"}))
	env := newEnv(build(t, b), nil)
	s := start(t, env, nil)
	w, _ := listenerJobAt(t, s, "review", "enrich")
	apply(t, s, env, Event{ID: "f", Kind: JobOutcome, Wait: w.ID, Outcome: &jobs.Terminal{Kind: jobs.Failed, Message: "no data"}})
	inc := assertIncident(t, s, "review", `task listener 1 (creating, job type "enrich"): no data`)
	apply(t, s, env, command(IncidentRetry, inc, "r1"))
	w, _ = listenerJobAt(t, s, "review", "enrich")
	apply(t, s, env, listenerResult(w, nil))
	task := openTask(t, s, "review")
	flush(s)

	p90, p60 := 90, 60
	cmd := taskCmd("u1", task.ID, TaskUpdate, "")
	cmd.Task.Priority = &p90
	apply(t, s, env, cmd)
	w, job := listenerJobAt(t, s, "review", "clamp")
	if job.Headers[HeaderPriority] != "90" {
		t.Fatalf("updating job headers %v, want the priority the update sets", job.Headers)
	}
	flush(s)
	apply(t, s, env, listenerResult(w, &jobs.TaskResult{Corrections: &jobs.TaskCorrections{Priority: &p60}}))
	if rec := record(t, s, task.ID); rec.Priority != 60 || !lastOutcome(t, rec, "u1").OK {
		t.Fatalf("update: %+v, want priority 60, the listener's", rec)
	}
	flush(s)
	apply(t, s, env, cmd) // the same command again: already answered
	if len(s.Outbox) != 0 {
		t.Fatalf("a repeated command did something: %v", outboxIDs(s))
	}
	if w := userTaskWait(t, s, "review"); w.Task.Pending != nil {
		t.Fatalf("pending %+v", w.Task.Pending)
	}
}

// A boundary that interrupts a task whose command waits cancels the
// listener's job and the task; the command is answered by the task's end.
func TestTaskJobListenerInterrupted(t *testing.T) {
	b := approval(model.ListenTaskJob(model.JobListener{Event: model.ListenCompleting, Type: "check"})).
		TimerBoundary("late", "review", model.Duration("PT1H"), true).EndEvent("gone").Sequence("late", "gone")
	env := newEnv(build(t, b), nil)
	s := start(t, env, nil)
	task := openTask(t, s, "review")
	flush(s)
	apply(t, s, env, taskCmd("c1", task.ID, TaskComplete, "ann"))
	w, _ := listenerJobAt(t, s, "review", "check")
	flush(s)
	fire(t, s, env, "late")
	if got := effectWaits(s, CancelJob); len(got) != 1 || got[0] != w.ID {
		t.Fatalf("cancelled jobs %v, want the listener's %s", got, w.ID)
	}
	if rec := record(t, s, task.ID); rec.State != TaskCanceled {
		t.Fatalf("task %+v, want it canceled", rec)
	}
	assertStatus(t, s, Completed)
}

// A task created with an assignee goes through its assigning listeners:
// it opens unassigned, the assignment pending, and the listener's
// correction decides who holds it; no command lists an outcome.
func TestTaskJobListenerInitialAssignment(t *testing.T) {
	b := approval(model.WithHuman(model.Human{Assignee: `"alice"`}),
		model.ListenTaskJob(model.JobListener{Event: model.ListenAssigning, Type: "policy"}))
	env := newEnv(build(t, b), nil)
	s := start(t, env, nil)
	task := s.Task(userTaskWait(t, s, "review").Task.ID)
	w, job := listenerJobAt(t, s, "review", "policy")
	if task.Assignee != "" || task.Pending == nil || job.Headers[HeaderAssignee] != "alice" {
		t.Fatalf("opened task %+v (pending %+v), job headers %v: want it unassigned, alice's assignment pending", task, task.Pending, job.Headers)
	}
	flush(s)
	bob := "bob"
	apply(t, s, env, listenerResult(w, &jobs.TaskResult{Corrections: &jobs.TaskCorrections{Assignee: &bob}}))
	rec := record(t, s, task.ID)
	if rec.Assignee != "bob" || rec.State != TaskAssigned || rec.Pending != nil || len(rec.Outcomes) != 0 {
		t.Fatalf("after the listener: %+v", rec)
	}
	if got := taskFacts(s); len(got) != 1 || got[0] != "assigned:"+task.ID {
		t.Fatalf("facts %v, want the assignment", got)
	}
}
