package engine_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jetbpm/jetbpm/engine"
	"github.com/jetbpm/jetbpm/engine/instance"
	"github.com/jetbpm/jetbpm/engine/model"
	"github.com/jetbpm/jetbpm/internal/testwait"
	"github.com/jetbpm/jetbpm/streams/streamstest"
)

// approvalProcess is start → user task "review" (opts) → end.
func approvalProcess(t testing.TB, id string, opts ...model.NodeOption) *model.Process {
	t.Helper()
	return build(t, model.NewBuilder(id).StartEvent("start").UserTask("review", opts...).EndEvent("end").
		Sequence("start", "review", "end"))
}

// deploy deploys processes on eng.
func deployTasks(t testing.TB, eng *engine.Engine, ps ...*model.Process) {
	t.Helper()
	if _, err := eng.DeployAll(bounded(t), ps...); err != nil {
		t.Fatal(err)
	}
}

// start starts processID as instance id.
func startTask(t testing.TB, eng *engine.Engine, processID, id string, vars map[string]any) {
	t.Helper()
	if _, err := eng.Start(bounded(t), processID, vars, engine.InstanceID(id)); err != nil {
		t.Fatal(err)
	}
}

// taskAt waits until instance id waits on a user task at node, and returns
// the task's id (the instance view does not show it: the task list does).
func taskAt(t testing.TB, eng *engine.Engine, id, node string) string {
	t.Helper()
	var task string
	testwait.Until(t, 10*time.Second, "a task of "+id+" at "+node+" to be listed", func() error {
		list, err := eng.Tasks(bounded(t), engine.TaskFilter{Instance: id})
		if err != nil {
			return err
		}
		for _, rec := range list {
			if rec.Node == node {
				task = rec.ID
				return nil
			}
		}
		return fmt.Errorf("listed %v", taskIDs(list))
	})
	return task
}

// listed waits until f lists exactly want (task ids, in list order).
func listed(t testing.TB, eng *engine.Engine, f engine.TaskFilter, want ...string) []*instance.Task {
	t.Helper()
	var list []*instance.Task
	testwait.Until(t, 10*time.Second, fmt.Sprintf("tasks %+v to list %v", f, want), func() (err error) {
		if list, err = eng.Tasks(bounded(t), f); err != nil {
			return err
		}
		if got := taskIDs(list); !slices.Equal(got, want) {
			return fmt.Errorf("listed %v", got)
		}
		return nil
	})
	return list
}

func taskIDs(list []*instance.Task) []string {
	out := []string{}
	for _, rec := range list {
		out = append(out, rec.ID)
	}
	return out
}

// TestUserTaskLifecycle runs a task from creation to completion through
// the engine's Go API: listed by group, user and process; claimed;
// refused to another user; completed with variables that its output
// mapping takes; the instance goes on.
func TestUserTaskLifecycle(t *testing.T) {
	t.Parallel()
	env := streamstest.Start(t)
	eng := openEngine(t, env, nil)
	ctx := bounded(t)
	deployTasks(t, eng,
		approvalProcess(t, "approval", model.Named("Approve"), model.Input("amount", "amount"),
			model.WithHuman(model.Human{CandidateGroups: `"sales, ops"`, CandidateUsers: `"bob"`, Priority: "prio", FormKey: "approve-form"}),
			model.Output("decision", "approved")),
		approvalProcess(t, "expense", model.WithHuman(model.Human{CandidateGroups: `"ops"`})))
	startTask(t, eng, "approval", "a-1", map[string]any{"amount": 10, "prio": 40})
	startTask(t, eng, "approval", "a-2", map[string]any{"amount": 20, "prio": 90})
	startTask(t, eng, "expense", "x-1", nil)
	a1, a2, x1 := taskAt(t, eng, "a-1", "review"), taskAt(t, eng, "a-2", "review"), taskAt(t, eng, "x-1", "review")

	// Highest priority first: a-2 (90), x-1 (50), a-1 (40).
	listed(t, eng, engine.TaskFilter{}, a2, x1, a1)
	listed(t, eng, engine.TaskFilter{CandidateGroup: "sales"}, a2, a1)
	listed(t, eng, engine.TaskFilter{CandidateGroup: "ops"}, a2, x1, a1)
	listed(t, eng, engine.TaskFilter{CandidateUser: "bob"}, a2, a1)
	listed(t, eng, engine.TaskFilter{CandidateUser: "nobody", CandidateGroup: "ops"}, a2, x1, a1)
	listed(t, eng, engine.TaskFilter{ProcessID: "expense"}, x1)
	listed(t, eng, engine.TaskFilter{CandidateGroup: "ops", Offset: 1, Limit: 1}, x1)
	listed(t, eng, engine.TaskFilter{CandidateGroup: "hr"})

	rec, err := eng.Task(ctx, a1)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Instance != "a-1" || rec.ProcessID != "approval" || rec.Version != 1 || rec.Node != "review" || rec.Name != "Approve" ||
		rec.State != instance.TaskCreated || rec.Priority != 40 || rec.FormKey != "approve-form" || rec.CreatedAt.IsZero() ||
		!slices.Equal(rec.CandidateGroups, []string{"sales", "ops"}) || !slices.Equal(rec.CandidateUsers, []string{"bob"}) ||
		fmt.Sprint(rec.Variables) != "map[amount:10]" || rec.Revision != 1 {
		t.Fatalf("record %+v", rec)
	}

	// Claim; another user is refused; the holder's claim again is fine.
	rec, err = eng.ClaimTask(ctx, a1, "alice")
	if err != nil {
		t.Fatal(err)
	}
	if rec.Assignee != "alice" || rec.ClaimedBy != "alice" || rec.State != instance.TaskAssigned || len(rec.Outcomes) != 1 || !rec.Outcomes[0].OK {
		t.Fatalf("claimed %+v", rec)
	}
	_, err = eng.ClaimTask(ctx, a1, "carol")
	if !errors.Is(err, engine.ErrConflict) || !strings.Contains(err.Error(), "is assigned to alice") {
		t.Fatalf("claim by carol: %v, want a conflict naming alice", err)
	}
	if rec, err = eng.ClaimTask(ctx, a1, "alice"); err != nil || rec.Assignee != "alice" || len(rec.Outcomes) != 3 {
		t.Fatalf("claim by the holder: %+v, %v", rec, err)
	}
	// A candidate list shows what its users may claim: not a1 any more.
	listed(t, eng, engine.TaskFilter{CandidateGroup: "sales"}, a2)
	listed(t, eng, engine.TaskFilter{CandidateGroup: "sales", IncludeAssigned: true}, a2, a1)
	listed(t, eng, engine.TaskFilter{Assignee: "alice"}, a1)
	listed(t, eng, engine.TaskFilter{State: "assigned"}, a1)

	// Complete: the output mapping takes "approved", the rest is dropped.
	rec, err = eng.CompleteTask(ctx, a1, "alice", map[string]any{"approved": true, "noise": 1})
	if err != nil {
		t.Fatal(err)
	}
	if rec.State != instance.TaskCompleted || rec.CompletedBy != "alice" || rec.EndedAt.IsZero() {
		t.Fatalf("completed %+v", rec)
	}
	v := waitDone(t, eng, "a-1")
	if v.Status != instance.Completed || v.Variables["decision"] != true {
		t.Fatalf("instance %+v", v)
	}
	if _, ok := v.Variables["noise"]; ok {
		t.Errorf("an unmapped result reached the instance: %v", v.Variables)
	}
	_, err = eng.CompleteTask(ctx, a1, "bob", nil)
	if !errors.Is(err, engine.ErrFinished) || !strings.Contains(err.Error(), "completed by alice") {
		t.Fatalf("second complete: %v, want ErrFinished naming alice", err)
	}
	listed(t, eng, engine.TaskFilter{}, a2, x1)
	listed(t, eng, engine.TaskFilter{State: engine.TasksAll}, a2, x1, a1)
	listed(t, eng, engine.TaskFilter{State: "completed"}, a1)
}

// TestUserTaskConcurrentCompletes completes each task from two goroutines
// at once: exactly one wins, the other is refused with ErrFinished naming
// the winner, and the instance goes on once.
func TestUserTaskConcurrentCompletes(t *testing.T) {
	t.Parallel()
	env := streamstest.Start(t)
	eng := openEngine(t, env, nil)
	deployTasks(t, eng, approvalProcess(t, "race"))
	const n = 6
	tasks := make([]string, n)
	for i := range n {
		id := fmt.Sprintf("race-%d", i)
		startTask(t, eng, "race", id, nil)
		tasks[i] = taskAt(t, eng, id, "review")
	}
	for i, task := range tasks {
		errs := make(chan error, 2)
		for _, user := range []string{"alice", "bob"} {
			go func() {
				_, err := eng.CompleteTask(bounded(t), task, user, map[string]any{"by": user})
				if err != nil {
					err = fmt.Errorf("%s: %w", user, err)
				}
				errs <- err
			}()
		}
		var won, lost []error
		for range 2 {
			if err := <-errs; err == nil {
				won = append(won, err)
			} else {
				lost = append(lost, err)
			}
		}
		if len(won) != 1 || len(lost) != 1 {
			t.Fatalf("task %s: %d won, refusals %v; want one of each", task, len(won), lost)
		}
		rec, err := eng.Task(bounded(t), task)
		if err != nil {
			t.Fatal(err)
		}
		loser := "alice"
		if rec.CompletedBy == "alice" {
			loser = "bob"
		}
		if !errors.Is(lost[0], engine.ErrFinished) || !strings.HasPrefix(lost[0].Error(), loser+": ") ||
			!strings.Contains(lost[0].Error(), "completed by "+rec.CompletedBy) {
			t.Fatalf("task %s completed by %s; the refusal: %v", task, rec.CompletedBy, lost[0])
		}
		v := waitDone(t, eng, fmt.Sprintf("race-%d", i))
		if v.Status != instance.Completed || v.Variables["by"] != rec.CompletedBy {
			t.Fatalf("instance %+v, the task completed by %s", v, rec.CompletedBy)
		}
	}
}

// TestUserTaskCompleteAfterCancel: cancelling the instance cancels its
// task, which leaves the open list; a complete is refused after.
func TestUserTaskCompleteAfterCancel(t *testing.T) {
	t.Parallel()
	env := streamstest.Start(t)
	eng := openEngine(t, env, nil)
	ctx := bounded(t)
	deployTasks(t, eng, approvalProcess(t, "cancelled"))
	startTask(t, eng, "cancelled", "c-1", nil)
	task := taskAt(t, eng, "c-1", "review")
	if err := eng.Cancel(ctx, "c-1", "changed my mind"); err != nil {
		t.Fatal(err)
	}
	listed(t, eng, engine.TaskFilter{})
	listed(t, eng, engine.TaskFilter{State: "canceled"}, task)
	rec, err := eng.Task(ctx, task)
	if err != nil || rec.State != instance.TaskCanceled || rec.EndedAt.IsZero() {
		t.Fatalf("record %+v, %v", rec, err)
	}
	for name, op := range map[string]func() error{
		"complete": func() error { _, err := eng.CompleteTask(ctx, task, "alice", nil); return err },
		"claim":    func() error { _, err := eng.ClaimTask(ctx, task, "alice"); return err },
		"error":    func() error { _, err := eng.TaskError(ctx, task, "alice", "NO", "", nil); return err },
	} {
		if err := op(); !errors.Is(err, engine.ErrFinished) || !strings.Contains(err.Error(), "task "+task+" is canceled") {
			t.Errorf("%s after cancel: %v, want ErrFinished: the task is canceled", name, err)
		}
	}
}

// TestUserTaskChanges: unclaim, assign and update show on the record, and
// bad input is refused before anything is sent.
func TestUserTaskChanges(t *testing.T) {
	t.Parallel()
	env := streamstest.Start(t)
	eng := openEngine(t, env, nil)
	ctx := bounded(t)
	deployTasks(t, eng, approvalProcess(t, "changes", model.WithHuman(model.Human{Assignee: `"alice"`})))
	startTask(t, eng, "changes", "ch-1", nil)
	startTask(t, eng, "changes", "ch-2", nil)
	task, other := taskAt(t, eng, "ch-1", "review"), taskAt(t, eng, "ch-2", "review")

	rec, err := eng.Task(ctx, task)
	if err != nil || rec.State != instance.TaskAssigned || rec.Assignee != "alice" || rec.ClaimedBy != "" {
		t.Fatalf("created %+v, %v", rec, err)
	}
	if rec, err = eng.UnclaimTask(ctx, task, "alice"); err != nil || rec.State != instance.TaskCreated || rec.Assignee != "" {
		t.Fatalf("unclaimed %+v, %v", rec, err)
	}
	if rec, err = eng.AssignTask(ctx, task, "bob"); err != nil || rec.State != instance.TaskAssigned || rec.Assignee != "bob" || rec.ClaimedBy != "" {
		t.Fatalf("assigned %+v, %v", rec, err)
	}
	// An operator's assign overrides whoever holds the task.
	if _, err := eng.ClaimTask(ctx, task, "carol"); !errors.Is(err, engine.ErrConflict) {
		t.Fatalf("claim of bob's task: %v", err)
	}
	if rec, err = eng.AssignTask(ctx, task, "carol"); err != nil || rec.Assignee != "carol" {
		t.Fatalf("assigned over bob %+v, %v", rec, err)
	}
	due, follow, prio := time.Date(2026, 12, 24, 17, 0, 0, 0, time.FixedZone("CET", 3600)), time.Date(2026, 12, 20, 0, 0, 0, 0, time.UTC), 80
	if rec, err = eng.UpdateTask(ctx, task, engine.TaskUpdate{DueDate: &due, FollowUpDate: &follow, Priority: &prio, User: "ops"}); err != nil ||
		!rec.DueDate.Equal(due) || rec.DueDate.Location() != time.UTC || !rec.FollowUpDate.Equal(follow) || rec.Priority != 80 {
		t.Fatalf("updated %+v, %v", rec, err)
	}
	listed(t, eng, engine.TaskFilter{}, task, other) // priority 80 before 50
	listed(t, eng, engine.TaskFilter{DueBefore: due.Add(time.Second)}, task)
	listed(t, eng, engine.TaskFilter{DueBefore: due})
	var zero time.Time
	if rec, err = eng.UpdateTask(ctx, task, engine.TaskUpdate{DueDate: &zero}); err != nil || !rec.DueDate.IsZero() || !rec.FollowUpDate.Equal(follow) {
		t.Fatalf("due date cleared: %+v, %v", rec, err)
	}
	if rec, err = eng.AssignTask(ctx, task, ""); err != nil || rec.State != instance.TaskCreated || rec.Assignee != "" {
		t.Fatalf("assigned to nobody %+v, %v", rec, err)
	}
	if got := len(rec.Outcomes); got != 7 {
		t.Errorf("%d outcomes listed, want the 7 commands", got)
	}

	// Refused before sending: the record does not change.
	prio = 150
	for name, op := range map[string]func() error{
		"claim without user":  func() error { _, err := eng.ClaimTask(ctx, task, ""); return err },
		"update of nothing":   func() error { _, err := eng.UpdateTask(ctx, task, engine.TaskUpdate{}); return err },
		"priority 150":        func() error { _, err := eng.UpdateTask(ctx, task, engine.TaskUpdate{Priority: &prio}); return err },
		"error without code":  func() error { _, err := eng.TaskError(ctx, task, "", "", "", nil); return err },
		"a control character": func() error { _, err := eng.ClaimTask(ctx, task, "al\nice"); return err },
		"a user of 300 bytes": func() error { _, err := eng.AssignTask(ctx, task, strings.Repeat("u", 300)); return err },
		"a bad variable":      func() error { _, err := eng.CompleteTask(ctx, task, "", map[string]any{"f": func() {}}); return err },
		"an empty name":       func() error { _, err := eng.CompleteTask(ctx, task, "", map[string]any{"": 1}); return err },
	} {
		if err := op(); !errors.Is(err, engine.ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
		}
	}
	if _, err := eng.CompleteTask(ctx, task, "", map[string]any{"big": strings.Repeat("x", 300<<10)}); !errors.Is(err, engine.ErrTooLarge) {
		t.Errorf("a variable over the limit: %v, want ErrTooLarge", err)
	}
	if after, err := eng.Task(ctx, task); err != nil || after.Revision != rec.Revision {
		t.Errorf("refused input changed the record: revision %d, was %d (%v)", after.Revision, rec.Revision, err)
	}
	for _, id := range []string{"ch-1.t999", "nope.t1", "ch-1", "", "a b.t1", "ch-1.x1"} {
		if _, err := eng.ClaimTask(ctx, id, "alice"); !errors.Is(err, engine.ErrNotFound) {
			t.Errorf("claim of %q: %v, want ErrNotFound", id, err)
		}
		if _, err := eng.Task(ctx, id); !errors.Is(err, engine.ErrNotFound) {
			t.Errorf("task %q: %v, want ErrNotFound", id, err)
		}
	}
	for _, f := range []engine.TaskFilter{{State: "done"}, {Limit: -1}, {Offset: -1}} {
		if _, err := eng.Tasks(ctx, f); !errors.Is(err, engine.ErrInvalid) {
			t.Errorf("list %+v: %v, want ErrInvalid", f, err)
		}
	}
}
