package engine_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetbpm/jetbpm/engine"
	"github.com/jetbpm/jetbpm/engine/enginetest"
	"github.com/jetbpm/jetbpm/engine/instance"
	"github.com/jetbpm/jetbpm/engine/model"
	"github.com/jetbpm/jetbpm/incidents"
	"github.com/jetbpm/jetbpm/internal/testwait"
	"github.com/jetbpm/jetbpm/streams"
	"github.com/jetbpm/jetbpm/streams/streamstest"
)

// waitFor waits until instance id's view satisfies cond.
func waitFor(t testing.TB, eng *engine.Engine, id, what string, cond func(*engine.InstanceView) bool) *engine.InstanceView {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	v, err := eng.WaitUntil(ctx, id, cond)
	if err != nil {
		t.Fatalf("instance %s never had %s: %+v: %v", id, what, v, err)
	}
	return v
}

// TestUserTaskBpmnError: a BPMN error thrown from a task goes to the
// task's error boundary with its variables; uncaught, it raises an
// incident on the task, whose retry creates a new task.
func TestUserTaskBpmnError(t *testing.T) {
	t.Parallel()
	env := streamstest.Start(t)
	eng := openEngine(t, env, nil)
	ctx := bounded(t)
	deployTasks(t, eng, build(t, model.NewBuilder("rejectable").StartEvent("start").UserTask("review").EndEvent("end").
		ErrorBoundary("rejected", "review", "REJECTED").ScriptTask("mark", `"rejected"`, "outcome").EndEvent("end2").
		Sequence("start", "review", "end").Sequence("rejected", "mark", "end2")))
	startTask(t, eng, "rejectable", "r-1", nil)
	task := taskAt(t, eng, "r-1", "review")
	rec, err := eng.TaskError(ctx, task, "alice", "REJECTED", "over budget", map[string]any{"reason": "budget"})
	if err != nil {
		t.Fatal(err)
	}
	if rec.State != instance.TaskCompleted || rec.Error == nil || rec.Error.Code != "REJECTED" || rec.Error.Message != "over budget" || rec.CompletedBy != "alice" {
		t.Fatalf("record %+v (error %+v)", rec, rec.Error)
	}
	v := waitDone(t, eng, "r-1")
	if v.Status != instance.Completed || v.Variables["outcome"] != "rejected" || v.Variables["reason"] != "budget" {
		t.Fatalf("instance %+v", v)
	}
	if _, err := eng.CompleteTask(ctx, task, "bob", nil); !errors.Is(err, engine.ErrFinished) || !errorContains(err, `ended with BPMN error "REJECTED" by alice`) {
		t.Fatalf("complete after the error: %v", err)
	}

	// No boundary catches OTHER: an incident on the task; a retry is a new task.
	startTask(t, eng, "rejectable", "r-2", nil)
	task = taskAt(t, eng, "r-2", "review")
	if _, err := eng.TaskError(ctx, task, "", "OTHER", "", nil); err != nil {
		t.Fatal(err)
	}
	v = waitFor(t, eng, "r-2", "an incident", func(v *engine.InstanceView) bool { return len(v.Incidents) == 1 })
	if inc := v.Incidents[0]; inc.Node != "review" || inc.CauseClass != incidents.CauseBpmnError {
		t.Fatalf("incident %+v", inc)
	}
	listed(t, eng, engine.TaskFilter{Instance: "r-2"})
	if err := eng.RetryIncident(ctx, v.Incidents[0].ID); err != nil {
		t.Fatal(err)
	}
	retried := taskAt(t, eng, "r-2", "review")
	if retried == task {
		t.Fatalf("the retry reopened task %s; want a new task", task)
	}
	if _, err := eng.CompleteTask(ctx, retried, "bob", nil); err != nil {
		t.Fatal(err)
	}
	if v := waitDone(t, eng, "r-2"); v.Status != instance.Completed {
		t.Fatalf("instance %+v", v)
	}
}

func errorContains(err error, s string) bool { return err != nil && strings.Contains(err.Error(), s) }

// TestUserTaskTimerBoundaries: a non-interrupting timer leaves the task
// open and opens a second one; an interrupting timer cancels the task,
// which leaves the open list.
func TestUserTaskTimerBoundaries(t *testing.T) {
	t.Parallel()
	env := streamstest.Start(t)
	eng := openEngine(t, env, nil)
	ctx := bounded(t)
	deployTasks(t, eng,
		build(t, model.NewBuilder("reminded").StartEvent("start").UserTask("review").EndEvent("end").
			TimerBoundary("remind", "review", model.Duration("PT0.2S"), false).UserTask("escalate").EndEvent("end2").
			Sequence("start", "review", "end").Sequence("remind", "escalate", "end2")),
		build(t, model.NewBuilder("timed-out").StartEvent("start").UserTask("review").EndEvent("end").
			TimerBoundary("timeout", "review", model.Duration("PT0.2S"), true).ScriptTask("mark", `"timed out"`, "outcome").EndEvent("end2").
			Sequence("start", "review", "end").Sequence("timeout", "mark", "end2")))

	startTask(t, eng, "reminded", "rem-1", nil)
	review := taskAt(t, eng, "rem-1", "review")
	escalate := taskAt(t, eng, "rem-1", "escalate")
	listed(t, eng, engine.TaskFilter{Instance: "rem-1"}, review, escalate)
	for _, task := range []string{escalate, review} {
		if _, err := eng.CompleteTask(ctx, task, "alice", nil); err != nil {
			t.Fatal(err)
		}
	}
	if v := waitDone(t, eng, "rem-1"); v.Status != instance.Completed {
		t.Fatalf("instance %+v", v)
	}

	startTask(t, eng, "timed-out", "to-1", nil)
	v := waitDone(t, eng, "to-1")
	if v.Status != instance.Completed || v.Variables["outcome"] != "timed out" {
		t.Fatalf("instance %+v", v)
	}
	// The task is canceled (its record is written just after the step).
	canceled := listed(t, eng, engine.TaskFilter{Instance: "to-1", State: "canceled"}, "to-1.t2")
	if rec := canceled[0]; rec.Node != "review" || rec.EndedAt.IsZero() {
		t.Fatalf("record %+v", rec)
	}
	listed(t, eng, engine.TaskFilter{Instance: "to-1"})
	if _, err := eng.ClaimTask(ctx, "to-1.t2", "alice"); !errors.Is(err, engine.ErrFinished) {
		t.Fatalf("claim of the timed-out task: %v", err)
	}
}

// TestUserTaskMultiInstance: a parallel multi-instance user task makes one
// task per item, each with its own assignee; completing them all collects
// their results.
func TestUserTaskMultiInstance(t *testing.T) {
	t.Parallel()
	env := streamstest.Start(t)
	eng := openEngine(t, env, nil)
	ctx := bounded(t)
	deployTasks(t, eng, build(t, model.NewBuilder("signoff").StartEvent("start").
		UserTask("sign", model.WithLoop(model.Loop{Collection: "signers", ElementVariable: "signer", OutputCollection: "signatures", OutputElement: "signature"}),
			model.WithHuman(model.Human{Assignee: "signer"})).
		EndEvent("end").Sequence("start", "sign", "end")))
	startTask(t, eng, "signoff", "so-1", map[string]any{"signers": []any{"ann", "ben", "cid"}})
	var list []*instance.Task
	testwait.Until(t, 10*time.Second, "three sign tasks", func() (err error) {
		if list, err = eng.Tasks(ctx, engine.TaskFilter{Instance: "so-1"}); err == nil && len(list) != 3 {
			err = fmt.Errorf("listed %v", taskIDs(list))
		}
		return err
	})
	var assignees []string
	for _, rec := range list {
		assignees = append(assignees, rec.Assignee)
	}
	slices.Sort(assignees)
	if !slices.Equal(assignees, []string{"ann", "ben", "cid"}) {
		t.Fatalf("assignees %v", assignees)
	}
	for _, rec := range list {
		if mine := listed(t, eng, engine.TaskFilter{Assignee: rec.Assignee}, rec.ID); mine[0].Node != "sign" {
			t.Fatalf("task %+v", mine[0])
		}
		if _, err := eng.CompleteTask(ctx, rec.ID, rec.Assignee, map[string]any{"signature": "signed by " + rec.Assignee}); err != nil {
			t.Fatal(err)
		}
	}
	v := waitDone(t, eng, "so-1")
	if v.Status != instance.Completed || fmt.Sprint(v.Variables["signatures"]) != "[signed by ann signed by ben signed by cid]" {
		t.Fatalf("instance %+v", v)
	}
}

// TestUserTaskSurvivesRestart: with the engine and the server restarted,
// the new engine's index is rebuilt from the bucket and commands work.
func TestUserTaskSurvivesRestart(t *testing.T) {
	t.Parallel()
	env := streamstest.Start(t, streamstest.WithFastFailover(time.Second))
	eng := openEngine(t, env, nil)
	deployTasks(t, eng, approvalProcess(t, "durable", model.WithHuman(model.Human{CandidateGroups: `"ops"`})))
	startTask(t, eng, "durable", "d-1", nil)
	startTask(t, eng, "durable", "d-2", nil)
	d1, d2 := taskAt(t, eng, "d-1", "review"), taskAt(t, eng, "d-2", "review")
	if _, err := eng.ClaimTask(bounded(t), d1, "alice"); err != nil {
		t.Fatal(err)
	}
	order := sortedByAge(t, eng, []string{d1, d2})
	if err := eng.Close(bounded(t)); err != nil {
		t.Fatal(err)
	}
	env.Restart(t)
	eng = openEngine(t, env, nil)
	// No write since: the list comes from the bucket alone.
	listed(t, eng, engine.TaskFilter{CandidateGroup: "ops", IncludeAssigned: true}, order...)
	listed(t, eng, engine.TaskFilter{Assignee: "alice"}, d1)
	if _, err := eng.ClaimTask(bounded(t), d1, "bob"); !errors.Is(err, engine.ErrConflict) {
		t.Fatalf("claim of alice's task after the restart: %v", err)
	}
	for _, task := range []string{d1, d2} {
		if _, err := eng.CompleteTask(bounded(t), task, "alice", nil); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range []string{"d-1", "d-2"} {
		if v := waitDone(t, eng, id); v.Status != instance.Completed {
			t.Fatalf("instance %+v", v)
		}
	}
}

// TestUserTaskFailover: two engine nodes on one server; each node's index
// lists every task, whichever node runs its instance, and a command sent
// through one node reaches an instance the other runs. When the first
// node stops, the second carries on.
func TestUserTaskFailover(t *testing.T) {
	t.Parallel()
	env := streamstest.Start(t, streamstest.WithFastFailover(time.Second))
	nodeA := enginetest.Open(t, env.NewConn(t), engine.Options{})
	deployTasks(t, nodeA, approvalProcess(t, "shared"))
	const n = 8 // over the 4 partitions: node A pulls them all first
	tasks := make([]string, n)
	for i := range n {
		id := fmt.Sprintf("s-%d", i)
		startTask(t, nodeA, "shared", id, nil)
		tasks[i] = taskAt(t, nodeA, id, "review")
	}
	nodeB := enginetest.Open(t, env.NewConn(t), engine.Options{})
	all := listed(t, nodeB, engine.TaskFilter{State: engine.TasksAll}, sortedByAge(t, nodeA, tasks)...)
	if len(all) != n {
		t.Fatalf("node B lists %d tasks", len(all))
	}
	if _, err := nodeB.ClaimTask(bounded(t), tasks[0], "alice"); err != nil {
		t.Fatal(err)
	}
	if err := nodeA.Close(bounded(t)); err != nil {
		t.Fatal(err)
	}
	for _, task := range tasks {
		if _, err := nodeB.CompleteTask(bounded(t), task, "alice", nil); err != nil {
			t.Fatal(err)
		}
	}
	for i := range n {
		if v := waitDone(t, nodeB, fmt.Sprintf("s-%d", i)); v.Status != instance.Completed {
			t.Fatalf("instance %+v", v)
		}
	}
	listed(t, nodeB, engine.TaskFilter{})
}

// sortedByAge returns tasks in list order (same priority: oldest first).
func sortedByAge(t testing.TB, eng *engine.Engine, tasks []string) []string {
	t.Helper()
	list, err := eng.Tasks(bounded(t), engine.TaskFilter{State: engine.TasksAll})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, rec := range list {
		if slices.Contains(tasks, rec.ID) {
			out = append(out, rec.ID)
		}
	}
	return out
}

// TestFinishedTaskExpires: a finished task's record lives for the
// finished-instance retention, then leaves the bucket and the index.
func TestFinishedTaskExpires(t *testing.T) {
	t.Parallel()
	env := streamstest.Start(t)
	eng := enginetest.Open(t, env.Conn, engine.Options{FinishedRetention: time.Second})
	deployTasks(t, eng, approvalProcess(t, "brief"))
	startTask(t, eng, "brief", "b-1", nil)
	task := taskAt(t, eng, "b-1", "review")
	if _, err := eng.CompleteTask(bounded(t), task, "alice", nil); err != nil {
		t.Fatal(err)
	}
	// The expiry may come before this list: it only must not be late.
	testwait.Until(t, 15*time.Second, "the finished task to expire", func() error {
		list, err := eng.Tasks(bounded(t), engine.TaskFilter{State: engine.TasksAll})
		if err != nil {
			return err
		}
		if len(list) > 0 {
			return fmt.Errorf("listed %v", taskIDs(list))
		}
		if _, err := eng.Task(bounded(t), task); !errors.Is(err, engine.ErrNotFound) {
			return fmt.Errorf("task %s: %v", task, err)
		}
		return nil
	})
}

// TestUserTaskCrashBeforeItsRecord: the node that created a task dies
// after the checkpoint, before the task's record is written. The task is
// read from the checkpoint meanwhile; the next node publishes the record
// and takes commands (docs/usertasks.md §6).
func TestUserTaskCrashBeforeItsRecord(t *testing.T) {
	t.Parallel()
	env := streamstest.Start(t, streamstest.WithFastFailover(time.Second))
	crashed := make(chan struct{})
	opts := engine.Options{}
	engine.CrashAfterWrite(&opts, func(id string) bool {
		select {
		case <-crashed:
			return false
		default:
		}
		if id == "cr-1" {
			close(crashed)
			return true
		}
		return false
	})
	nodeA := enginetest.Open(t, env.NewConn(t), opts)
	deployTasks(t, nodeA, approvalProcess(t, "crashing", model.WithHuman(model.Human{CandidateGroups: `"ops"`})))
	// The start's own step crashes: its caller hears an error, as from a
	// dead node; the next node's sweep finishes it (docs/engine.md §4.1).
	if _, err := nodeA.Start(bounded(t), "crashing", nil, engine.InstanceID("cr-1")); err == nil {
		t.Fatal("Start answered nil though its node crashed after the write")
	}
	select {
	case <-crashed:
	case <-time.After(10 * time.Second):
		t.Fatal("the crash point was not reached")
	}
	const task = "cr-1.t2"
	kv, err := env.JS.KeyValue(bounded(t), streams.TasksBucket)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Get(bounded(t), streams.TaskKey(task)); !errors.Is(err, jetstream.ErrKeyNotFound) {
		t.Fatalf("the record is stored already: %v", err)
	}
	rec, err := nodeA.Task(bounded(t), task)
	if err != nil || rec.State != instance.TaskCreated || rec.Node != "review" || fmt.Sprint(rec.CandidateGroups) != "[ops]" {
		t.Fatalf("task from the checkpoint: %+v, %v", rec, err)
	}
	if err := nodeA.Close(bounded(t)); err != nil {
		t.Fatal(err)
	}
	nodeB := enginetest.Open(t, env.NewConn(t), engine.Options{})
	if rec, err = nodeB.ClaimTask(bounded(t), task, "alice"); err != nil || rec.Assignee != "alice" {
		t.Fatalf("claim = %+v, %v", rec, err)
	}
	listed(t, nodeB, engine.TaskFilter{Assignee: "alice"}, task)
	if _, err := nodeB.CompleteTask(bounded(t), task, "alice", nil); err != nil {
		t.Fatal(err)
	}
	if v := waitDone(t, nodeB, "cr-1"); v.Status != instance.Completed {
		t.Fatalf("instance %+v", v)
	}
	testwait.Until(t, 10*time.Second, "one created fact", func() error {
		var created int
		for _, f := range storedTaskFacts(t, env.JS, "crashing") {
			if f.Kind == instance.TaskFactCreated {
				created++
			}
		}
		if created != 1 {
			return fmt.Errorf("%d created facts", created)
		}
		return nil
	})
}
