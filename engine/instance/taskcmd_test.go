package instance

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jetbpm/jetbpm/engine/model"
)

func TestTaskClaimUnclaimAssignUpdate(t *testing.T) {
	s, env := run(t, approval(model.WithHuman(model.Human{CandidateGroups: `"sales"`})), nil)
	id := openTask(t, s, "review").ID
	flush(s)

	step := func(ev Event) *Task {
		t.Helper()
		flush(s)
		if n := apply(t, s, env, ev); n != 1 {
			t.Fatalf("%s %s: applied %d, want 1", ev.Task.Op, ev.ID, n)
		}
		rec := record(t, s, id)
		if got := openTask(t, s, "review"); fmt.Sprintf("%+v", *got) != fmt.Sprintf("%+v", *rec) {
			t.Fatalf("record %+v differs from the checkpoint's task %+v", rec, got)
		}
		return rec
	}
	rec := step(taskCmd("c1", id, TaskClaim, "alice"))
	if rec.State != TaskAssigned || rec.Assignee != "alice" || rec.ClaimedBy != "alice" || rec.Revision != 2 || !lastOutcome(t, rec, "c1").OK {
		t.Fatalf("after claim %+v", rec)
	}
	if got := taskFacts(s); !slices.Equal(got, []string{"assigned:" + id}) {
		t.Errorf("facts %v, want assigned", got)
	}

	// Another user's claim is refused; the holder's changes nothing.
	rec = step(taskCmd("c2", id, TaskClaim, "bob"))
	if o := lastOutcome(t, rec, "c2"); o.OK || o.Reason != "task "+id+" is assigned to alice" || o.User != "bob" || o.Op != TaskClaim {
		t.Fatalf("conflicting claim: %+v", o)
	}
	if rec.Assignee != "alice" || rec.Revision != 3 || len(taskFacts(s)) != 0 {
		t.Fatalf("after a refused claim %+v, facts %v", rec, taskFacts(s))
	}
	rec = step(taskCmd("c3", id, TaskClaim, "alice"))
	if !lastOutcome(t, rec, "c3").OK || rec.Assignee != "alice" || len(taskFacts(s)) != 0 {
		t.Fatalf("the holder's claim: %+v, facts %v", rec, taskFacts(s))
	}
	rec = step(taskCmd("c4", id, TaskClaim, ""))
	if o := lastOutcome(t, rec, "c4"); o.OK || o.Reason != "claim names no user" {
		t.Fatalf("claim without a user: %+v", o)
	}

	// Unclaim; assign overrides; assign to nobody.
	rec = step(taskCmd("c5", id, TaskUnclaim, "alice"))
	if rec.State != TaskCreated || rec.Assignee != "" || rec.ClaimedBy != "" || len(taskFacts(s)) != 0 {
		t.Fatalf("after unclaim %+v, facts %v", rec, taskFacts(s))
	}
	step(taskCmd("c6", id, TaskClaim, "bob"))
	rec = step(taskCmd("c7", id, TaskAssign, "carol"))
	if rec.State != TaskAssigned || rec.Assignee != "carol" || rec.ClaimedBy != "" || !lastOutcome(t, rec, "c7").OK {
		t.Fatalf("after assign %+v", rec)
	}
	if got := taskFacts(s); !slices.Equal(got, []string{"assigned:" + id}) {
		t.Errorf("facts %v, want assigned", got)
	}
	rec = step(taskCmd("c8", id, TaskAssign, ""))
	if rec.State != TaskCreated || rec.Assignee != "" {
		t.Fatalf("after assign to nobody %+v", rec)
	}

	// Update sets what it names; a bad priority or an empty update is refused.
	due, prio := time.Date(2026, 5, 1, 12, 0, 0, 0, time.FixedZone("x", 7200)), 90
	ev := taskCmd("c9", id, TaskUpdate, "")
	ev.Task.DueDate, ev.Task.Priority = &due, &prio
	rec = step(ev)
	if !rec.DueDate.Equal(due) || rec.DueDate.Location() != time.UTC || rec.Priority != 90 || !rec.FollowUpDate.IsZero() {
		t.Fatalf("after update %+v", rec)
	}
	bad := 101
	ev = taskCmd("c10", id, TaskUpdate, "")
	ev.Task.Priority = &bad
	rec = step(ev)
	if o := lastOutcome(t, rec, "c10"); o.OK || o.Reason != "priority 101 is outside 0 to 100" || rec.Priority != 90 {
		t.Fatalf("bad priority: %+v, priority %d", o, rec.Priority)
	}
	rec = step(taskCmd("c11", id, TaskUpdate, ""))
	if o := lastOutcome(t, rec, "c11"); o.OK || !strings.Contains(o.Reason, "update sets nothing") {
		t.Fatalf("empty update: %+v", o)
	}
	var zero time.Time
	ev = taskCmd("c12", id, TaskUpdate, "")
	ev.Task.DueDate = &zero
	if rec = step(ev); !rec.DueDate.IsZero() || rec.Priority != 90 {
		t.Fatalf("clearing the due date: %+v", rec)
	}
	rec = step(taskCmd("c13", id, "snooze", ""))
	if o := lastOutcome(t, rec, "c13"); o.OK || !strings.Contains(o.Reason, `unknown task operation "snooze"`) {
		t.Fatalf("unknown op: %+v", o)
	}

	// The same command id again is not applied twice.
	flush(s)
	if n := apply(t, s, env, taskCmd("c13", id, TaskClaim, "dave")); n != 0 || openTask(t, s, "review").Assignee != "" {
		t.Fatalf("a repeated command id applied %d times", n)
	}
}

func TestTaskCompleteWithOutputMappings(t *testing.T) {
	s, env := run(t, approval(model.Input("limit", "1000"), model.Output("ok", "approved && amount <= limit"),
		model.WithHuman(model.Human{Assignee: `"alice"`})), map[string]any{"amount": 500})
	id := openTask(t, s, "review").ID
	flush(s)
	env.Now = t0.Add(time.Hour)
	ev := taskCmd("c1", id, TaskComplete, "alice")
	ev.Task.Vars = map[string]any{"approved": true, "note": "fine"}
	if n := apply(t, s, env, ev); n != 1 {
		t.Fatalf("complete applied %d", n)
	}
	assertStatus(t, s, Completed)
	assertVars(t, s.Variables(), map[string]any{"ok": true})
	assertNoVar(t, s.Variables(), "approved", "note", "limit")
	rec := record(t, s, id)
	if rec.State != TaskCompleted || rec.CompletedBy != "alice" || !rec.EndedAt.Equal(env.Now) || !lastOutcome(t, rec, "c1").OK ||
		rec.Variables["limit"] != int64(1000) || rec.Revision != 2 {
		t.Fatalf("completed record %+v", rec)
	}
	if got := taskFacts(s); !slices.Equal(got, []string{"completed:" + id}) {
		t.Errorf("facts %v", got)
	}
	if f := effects(s, PublishTaskFact)[0].TaskFact; f.User != "alice" || f.ErrorCode != "" {
		t.Errorf("completed fact %+v", f)
	}
}

// Without output mappings a task's results are merged into the instance.
func TestTaskCompleteMergesResults(t *testing.T) {
	s, env := run(t, approval(), nil)
	ev := taskCmd("c1", openTask(t, s, "review").ID, TaskComplete, "")
	ev.Task.Vars = map[string]any{"approved": true}
	apply(t, s, env, ev)
	assertStatus(t, s, Completed)
	assertVars(t, s.Variables(), map[string]any{"approved": true})
}

// twoTasks is a process with two user tasks in parallel, "review" and
// "other": completing one leaves the instance active.
func twoTasks() *model.Builder {
	return model.NewBuilder("two").StartEvent("start").ParallelGateway("fork").
		UserTask("review").EndEvent("end").UserTask("other").EndEvent("end2").
		Sequence("start", "fork", "review", "end").Sequence("fork", "other", "end2")
}

// Two completes in one step: the first wins, the second is listed on the
// final record as refused, naming who completed it — whether the instance
// ends with the task or not. A later one finds no task and is not
// applied: the engine answers from the stored record.
func TestTaskConcurrentCompletes(t *testing.T) {
	for name, b := range map[string]*model.Builder{"instance ends": approval(), "instance goes on": twoTasks()} {
		t.Run(name, func(t *testing.T) {
			s, env := run(t, b, nil)
			id := openTask(t, s, "review").ID
			flush(s)
			first, second := taskCmd("c1", id, TaskComplete, "alice"), taskCmd("c2", id, TaskComplete, "bob")
			first.Task.Vars, second.Task.Vars = map[string]any{"by": "alice"}, map[string]any{"by": "bob"}
			if n := apply(t, s, env, first, second, second); n != 2 {
				t.Fatalf("applied %d, want 2 (the second refused on the record, once)", n)
			}
			assertVars(t, s.Variables(), map[string]any{"by": "alice"})
			rec := record(t, s, id)
			if rec.State != TaskCompleted || rec.CompletedBy != "alice" || len(rec.Outcomes) != 2 || !rec.Outcomes[0].OK || rec.Revision != 3 {
				t.Fatalf("record %+v", rec)
			}
			if o := lastOutcome(t, rec, "c2"); o.OK || o.Reason != "task "+id+" is completed by alice" {
				t.Fatalf("second complete: %+v", o)
			}
			if got := taskFacts(s); !slices.Equal(got, []string{"completed:" + id}) {
				t.Errorf("facts %v, want one completed", got)
			}
		})
	}

	// In a later step: not applied, nothing emitted.
	s, env := run(t, twoTasks(), nil)
	id := openTask(t, s, "review").ID
	apply(t, s, env, taskCmd("c1", id, TaskComplete, "alice"))
	flush(s)
	var discarded []string
	env.Discarded = func(ev Event) { discarded = append(discarded, ev.ID) }
	if n := apply(t, s, env, taskCmd("c2", id, TaskComplete, "bob"), taskCmd("c3", "i1.t999", TaskClaim, "bob")); n != 0 || len(s.Outbox) != 0 {
		t.Fatalf("commands for a gone task: applied %d, outbox %v", n, outboxIDs(s))
	}
	if !slices.Equal(discarded, []string{"c2", "c3"}) {
		t.Errorf("discarded %v", discarded)
	}
}

// Variables that cannot be stored refuse the command; the task stays open
// and nothing but its outcomes changes.
func TestTaskCompleteWithBadVariablesIsRefused(t *testing.T) {
	s, env := run(t, approval(), map[string]any{"keep": 1})
	env.CheckValue = func(name string, v any) error {
		if str, ok := v.(string); ok && len(str) > 5 {
			return fmt.Errorf("%d bytes is over the limit", len(str))
		}
		return nil
	}
	id := openTask(t, s, "review").ID
	for i, tt := range []struct {
		op   TaskOp
		vars map[string]any
		want string
	}{
		{TaskComplete, map[string]any{"ok": 1, "big": "too long"}, `variable "big": 8 bytes is over the limit`},
		{TaskComplete, map[string]any{"f": func() {}}, `variable "f": cannot store`},
		{TaskThrow, map[string]any{"": 1}, "a variable has an empty name"},
	} {
		flush(s)
		before := snapshot(t, s)
		cmd := fmt.Sprintf("c%d", i)
		ev := taskCmd(cmd, id, tt.op, "alice")
		ev.Task.Vars, ev.Task.ErrorCode = tt.vars, "E"
		apply(t, s, env, ev)
		rec := record(t, s, id)
		if o := lastOutcome(t, rec, cmd); o.OK || !strings.Contains(o.Reason, tt.want) {
			t.Fatalf("%s with %v: outcome %+v, want refused with %q", tt.op, tt.vars, o, tt.want)
		}
		// Nothing but the outcome and the revision changed.
		w := waitAt(t, s, "review")
		w.Task.Outcomes, w.Task.Revision = w.Task.Outcomes[:len(w.Task.Outcomes)-1], w.Task.Revision-1
		s.Outbox = nil
		if after := snapshot(t, s); after != before {
			t.Fatalf("a refused %s changed the state:\n%s\n%s", tt.op, before, after)
		}
		w.Task.Outcomes, w.Task.Revision = rec.Outcomes, rec.Revision
	}
	if rec := openTask(t, s, "review"); rec.State != TaskCreated || len(rec.Outcomes) != 3 {
		t.Fatalf("task %+v", rec)
	}
	ev := taskCmd("c9", id, TaskThrow, "alice")
	apply(t, s, env, ev)
	if o := lastOutcome(t, record(t, s, id), "c9"); o.OK || o.Reason != "error names no error code" {
		t.Fatalf("error without a code: %+v", o)
	}
}

// A BPMN error from a task: caught by its error boundary, after its
// variables are set; uncaught, it is an incident on the task, whose retry
// creates a new task.
func TestTaskError(t *testing.T) {
	b := approval().ErrorBoundary("rejected", "review", "REJECTED").ScriptTask("why", `"no: " + reason`, "outcome").
		EndEvent("end2").Sequence("rejected", "why", "end2")
	s, env := run(t, b, nil)
	id := openTask(t, s, "review").ID
	flush(s)
	ev := taskCmd("c1", id, TaskThrow, "alice")
	ev.Task.ErrorCode, ev.Task.ErrorMessage, ev.Task.Vars = "REJECTED", "over budget", map[string]any{"reason": "budget"}
	apply(t, s, env, ev)
	assertStatus(t, s, Completed)
	assertVars(t, s.Variables(), map[string]any{"outcome": "no: budget"})
	rec := record(t, s, id)
	if rec.State != TaskCompleted || rec.Error == nil || *rec.Error != (TaskError{"REJECTED", "over budget"}) || rec.CompletedBy != "alice" {
		t.Fatalf("record %+v", rec)
	}
	if want := `task ` + id + ` ended with BPMN error "REJECTED" by alice`; rec.EndedReason() != want {
		t.Errorf("EndedReason %q, want %q", rec.EndedReason(), want)
	}
	if f := effects(s, PublishTaskFact); len(f) != 1 || f[0].TaskFact.Kind != TaskFactCompleted || f[0].TaskFact.ErrorCode != "REJECTED" {
		t.Errorf("facts %v", taskFacts(s))
	}

	// Uncaught: an incident on the task; a retry makes a new task.
	s, env = run(t, approval(), nil)
	id = openTask(t, s, "review").ID
	ev = taskCmd("c1", id, TaskThrow, "alice")
	ev.Task.ErrorCode = "OTHER"
	ev.Task.Vars = map[string]any{"seen": true}
	flush(s)
	apply(t, s, env, ev)
	inc := assertIncident(t, s, "review", `uncaught BPMN error "OTHER"`)
	assertVars(t, s.Variables(), map[string]any{"seen": true})
	if rec := record(t, s, id); rec.State != TaskCompleted || rec.Error.Code != "OTHER" || len(s.OpenTasks()) != 0 {
		t.Fatalf("record %+v, open tasks %v", rec, s.OpenTasks())
	}
	flush(s)
	apply(t, s, env, command(IncidentRetry, inc, "r1"))
	if again := openTask(t, s, "review"); again.ID == id || again.State != TaskCreated {
		t.Fatalf("task after the retry %+v, want a new one", again)
	}
	if len(s.Incidents) != 0 {
		t.Fatalf("incidents %+v, want the retry that created a task to have resolved it", s.Incidents)
	}
}

// timed is the approval with an interrupting timer boundary "late" (1 h)
// and a non-interrupting one "remind" (10 min).
func timed() *model.Builder {
	return approval().
		TimerBoundary("late", "review", model.Duration("PT1H"), true).ScriptTask("escalate", `"late"`, "path").EndEvent("e2").
		Sequence("late", "escalate", "e2").
		TimerBoundary("remind", "review", model.Duration("PT10M"), false).ScriptTask("nudge", `(nudges ?? 0) + 1`, "nudges").EndEvent("e3").
		Sequence("remind", "nudge", "e3")
}

func TestTaskTimerBoundaries(t *testing.T) {
	s, env := run(t, timed(), nil)
	id := openTask(t, s, "review").ID
	if len(effects(s, ScheduleTimer)) != 2 {
		t.Fatalf("timers %v, want both boundaries armed with the task", effectWaits(s, ScheduleTimer))
	}
	flush(s)

	// The reminder runs beside the task; the task stays as it was.
	fire(t, s, env, "remind")
	assertVars(t, s.Variables(), map[string]any{"nudges": int64(1)})
	if rec := openTask(t, s, "review"); rec.ID != id || rec.State != TaskCreated || len(records(s))+len(taskFacts(s)) != 0 {
		t.Fatalf("after the reminder: task %+v, outbox %v", rec, outboxIDs(s))
	}

	// The interrupting timer cancels it.
	flush(s)
	fire(t, s, env, "late")
	assertStatus(t, s, Completed)
	assertVars(t, s.Variables(), map[string]any{"path": "late"})
	if rec := record(t, s, id); rec.State != TaskCanceled || !rec.EndedAt.Equal(env.Now) || rec.Revision != 2 {
		t.Fatalf("record %+v, want canceled", rec)
	}
	if got := taskFacts(s); !slices.Equal(got, []string{"canceled:" + id}) {
		t.Errorf("facts %v", got)
	}
	flush(s)
	if n := apply(t, s, env, taskCmd("c1", id, TaskComplete, "alice")); n != 0 {
		t.Fatalf("a complete after the cancel was applied")
	}
}

// Every way a task's token leaves without completing it cancels the task.
func TestTaskCanceledWhenItsTokenLeaves(t *testing.T) {
	parallel := model.NewBuilder("par").StartEvent("start").ParallelGateway("fork").
		UserTask("review").EndEvent("end").TimerCatchEvent("wait", model.Duration("PT1M")).TerminateEndEvent("stop").
		Sequence("start", "fork", "review", "end").Sequence("fork", "wait", "stop")
	tests := []struct {
		name string
		b    *model.Builder
		end  func(t *testing.T, s *State, env *testEnv)
		want Status
	}{
		{"cancel", approval(), func(t *testing.T, s *State, env *testEnv) {
			apply(t, s, env, Event{ID: "x", Kind: Cancel})
		}, Terminated},
		{"terminate end", parallel, func(t *testing.T, s *State, env *testEnv) { fire(t, s, env, "wait") }, Completed},
		{"abort", approval(), func(t *testing.T, s *State, env *testEnv) { Abort(s, env.Now, "broken") }, Failed},
		{"message boundary", approval().MessageBoundary("stop", "review", "stop", "order", true).EndEvent("stopped").
			Sequence("stop", "stopped"), func(t *testing.T, s *State, env *testEnv) {
			correlate(t, s, env, "stop", 1, nil)
		}, Completed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, env := run(t, tt.b, map[string]any{"order": "o-1"})
			id := openTask(t, s, "review").ID
			flush(s)
			tt.end(t, s, env)
			assertStatus(t, s, tt.want)
			if rec := record(t, s, id); rec.State != TaskCanceled {
				t.Fatalf("record %+v, want canceled", rec)
			}
			if got := taskFacts(s); !slices.Equal(got, []string{"canceled:" + id}) {
				t.Errorf("facts %v", got)
			}
		})
	}
}

// A message boundary whose subscription cannot be evaluated takes the
// task back: it never appears, and the incident is the task's.
func TestTaskTakenBackWhenItsBoundaryFails(t *testing.T) {
	b := approval().MessageBoundary("stop", "review", "stop", "missing.key", true).EndEvent("stopped").Sequence("stop", "stopped")
	s, _ := run(t, b, nil)
	assertIncident(t, s, "review", `message boundary "stop"`)
	if len(records(s))+len(taskFacts(s)) != 0 || len(s.OpenTasks()) != 0 {
		t.Fatalf("the task left in the outbox %v / open %v", outboxIDs(s), s.OpenTasks())
	}
}

// A multi-instance user task makes one task per iteration; completing
// early cancels the others.
func TestMultiInstanceUserTask(t *testing.T) {
	b := approval(model.Input("who", "person"), model.WithHuman(model.Human{Assignee: "person"}),
		model.WithLoop(model.Loop{Collection: "people", ElementVariable: "person", CompletionCondition: "nrOfCompletedInstances >= 2"}))
	s, env := run(t, b, map[string]any{"people": []any{"ann", "ben", "cy"}})
	tasks := s.OpenTasks()
	var ids, assignees []string
	for _, task := range tasks {
		ids, assignees = append(ids, task.ID), append(assignees, task.Assignee)
		if task.Variables["who"] != task.Assignee {
			t.Errorf("task %s variables %v, want its iteration's input", task.ID, task.Variables)
		}
	}
	if !slices.Equal(assignees, []string{"ann", "ben", "cy"}) || len(slices.Compact(slices.Clone(ids))) != 3 || len(records(s)) != 3 {
		t.Fatalf("tasks %v for %v, records %d", ids, assignees, len(records(s)))
	}
	flush(s)
	apply(t, s, env, taskCmd("c1", ids[1], TaskComplete, "ben"))
	if len(s.OpenTasks()) != 2 || record(t, s, ids[1]).State != TaskCompleted {
		t.Fatalf("after one: open %d", len(s.OpenTasks()))
	}
	flush(s)
	apply(t, s, env, taskCmd("c2", ids[0], TaskComplete, "ann"))
	assertStatus(t, s, Completed)
	if record(t, s, ids[0]).State != TaskCompleted || record(t, s, ids[2]).State != TaskCanceled {
		t.Fatalf("records %+v", records(s))
	}
	if got := taskFacts(s); !slices.Equal(got, []string{"completed:" + ids[0], "canceled:" + ids[2]}) {
		t.Errorf("facts %v", got)
	}
}

func TestTaskOutcomesAreBounded(t *testing.T) {
	s, env := run(t, approval(model.WithHuman(model.Human{Assignee: `"alice"`})), nil)
	id := openTask(t, s, "review").ID
	var want []string
	for i := range MaxTaskOutcomes + 3 {
		cmd := fmt.Sprintf("c%d", i)
		apply(t, s, env, taskCmd(cmd, id, TaskClaim, "alice"))
		want = append(want, cmd)
	}
	var got []string
	for _, o := range openTask(t, s, "review").Outcomes {
		got = append(got, o.ID)
	}
	if !slices.Equal(got, want[len(want)-MaxTaskOutcomes:]) {
		t.Fatalf("outcomes %v, want the last %d of %v", got, MaxTaskOutcomes, want)
	}
}
