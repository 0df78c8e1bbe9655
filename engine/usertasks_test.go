package engine_test

import (
	"context"
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

// tctx is a context for one call, bounded and cancelled with the test.
func tctx(t testing.TB) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// deploy deploys processes on eng.
func deployTasks(t testing.TB, eng *engine.Engine, ps ...*model.Process) {
	t.Helper()
	if _, err := eng.DeployAll(tctx(t), ps...); err != nil {
		t.Fatal(err)
	}
}

// start starts processID as instance id.
func startTask(t testing.TB, eng *engine.Engine, processID, id string, vars map[string]any) {
	t.Helper()
	if _, err := eng.Start(tctx(t), processID, vars, engine.InstanceID(id)); err != nil {
		t.Fatal(err)
	}
}

// taskAt waits until instance id waits on a user task at node, and returns
// the task's id (the instance view does not show it: the task list does).
func taskAt(t testing.TB, eng *engine.Engine, id, node string) string {
	t.Helper()
	var task string
	testwait.Until(t, 10*time.Second, "a task of "+id+" at "+node+" to be listed", func() error {
		list, err := eng.Tasks(tctx(t), engine.TaskFilter{Instance: id})
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
		if list, err = eng.Tasks(tctx(t), f); err != nil {
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
	ctx := tctx(t)
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
