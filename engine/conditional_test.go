package engine_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/jetbpm/jetbpm/engine"
	"github.com/jetbpm/jetbpm/engine/instance"
	"github.com/jetbpm/jetbpm/engine/model"
	"github.com/jetbpm/jetbpm/internal/testwait"
	"github.com/jetbpm/jetbpm/streams/streamstest"
)

// TestConditionalEvents runs conditional events on a real engine: each
// condition is re-evaluated in the step of the command that writes the
// variable (a user task's completion here), and one that holds when its
// wait opens fires in the step that opens it.
func TestConditionalEvents(t *testing.T) {
	t.Parallel()
	env := streamstest.Start(t)
	eng := openEngine(t, env, nil)

	// work and other run in parallel; completing other with cancel=true
	// interrupts work by the conditional boundary; level >= 2 runs the
	// non-interrupting event sub-process once per write that finds it
	// true; wait passes once ready holds.
	b := model.NewBuilder("cond").StartEvent("start").ParallelGateway("fork").
		UserTask("work").EndEvent("workEnd").UserTask("other").ConditionalCatchEvent("wait", "${ready == true}").
		UserTask("after").EndEvent("otherEnd").
		Sequence("start", "fork", "work", "workEnd").Sequence("fork", "other", "wait", "after", "otherEnd").
		ConditionalBoundary("stop", "work", "${cancel == true}", true).UserTask("stopped").EndEvent("stopEnd").
		Sequence("stop", "stopped", "stopEnd")
	b.EventSubProcess("noteEsp", false).ConditionalStartEvent("note", "${level >= 2}", model.ConditionVariable("level")).
		UserTask("noted").EndEvent("noteEnd").Sequence("note", "noted", "noteEnd")
	deployTasks(t, eng, build(t, b))

	// ready is true at start: wait passes as soon as other completes.
	startTask(t, eng, "cond", "c-1", map[string]any{"ready": true, "level": 0})
	work := taskAt(t, eng, "c-1", "work")
	if _, err := eng.CompleteTask(bounded(t), taskAt(t, eng, "c-1", "other"), "ann", map[string]any{"cancel": true, "level": 2}); err != nil {
		t.Fatal(err)
	}
	v := waitFor(t, eng, "c-1", "the boundary, the event sub-process and the catch to fire", func(v *engine.InstanceView) bool {
		return slices.Contains(v.ActiveNodes, "stopped") && slices.Contains(v.ActiveNodes, "noted") && slices.Contains(v.ActiveNodes, "after")
	})
	if slices.Contains(v.ActiveNodes, "work") {
		t.Fatalf("work is still active: %v", v.ActiveNodes)
	}
	if rec, err := eng.Task(bounded(t), work); err != nil || rec.State != instance.TaskCanceled {
		t.Fatalf("work's task %+v, %v", rec, err)
	}
	for _, node := range []string{"stopped", "noted", "after"} {
		if _, err := eng.CompleteTask(bounded(t), taskAt(t, eng, "c-1", node), "ann", nil); err != nil {
			t.Fatal(err)
		}
	}
	if v := waitDone(t, eng, "c-1"); v.Status != instance.Completed {
		t.Fatalf("c-1: %s %+v", v.Status, v.Failure)
	}

	// Nothing holds at start: the catch waits; a write that makes its
	// condition true in a later step moves it on.
	startTask(t, eng, "cond", "c-2", map[string]any{"ready": false, "level": 0})
	if _, err := eng.CompleteTask(bounded(t), taskAt(t, eng, "c-2", "other"), "ann", nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, eng, "c-2", "the catch to wait", func(v *engine.InstanceView) bool { return slices.Contains(v.ActiveNodes, "wait") })
	if _, err := eng.CompleteTask(bounded(t), taskAt(t, eng, "c-2", "work"), "ann", map[string]any{"ready": true}); err != nil {
		t.Fatal(err)
	}
	if _, err := eng.CompleteTask(bounded(t), taskAt(t, eng, "c-2", "after"), "ann", nil); err != nil {
		t.Fatal(err)
	}
	if v := waitDone(t, eng, "c-2"); v.Status != instance.Completed || v.Variables["ready"] != true {
		t.Fatalf("c-2: %s %+v %v", v.Status, v.Failure, v.Variables)
	}
}

// TestConformanceOrderRuns deploys the Camunda 7 external task client's
// order.bpmn: its timer start (timeDuration R10/PT5S, which Camunda 7
// fires once, after 5 s) starts one instance; the invoice worker's date
// makes the sub-process's conditional boundary hold as its job completes,
// and the instance ends through "Store invoice".
func TestConformanceOrderRuns(t *testing.T) {
	t.Parallel()
	env := streamstest.Start(t)
	eng := openEngine(t, env, nil)
	if _, err := eng.DeployFile(bounded(t), corpus+"camunda7-external-task-client-js/order.bpmn"); err != nil {
		t.Fatal(err)
	}
	var id string
	testwait.Until(t, 30*time.Second, "the timer start to start an instance", func() error {
		views, err := eng.Instances(bounded(t), engine.Filter{ProcessID: "Order_Process"})
		if err == nil && len(views) != 1 {
			err = fmt.Errorf("%d instances", len(views))
		}
		if err == nil {
			id = views[0].ID
		}
		return err
	})
	workers := serveJobs(t, env, id, []string{"invoiceCreator"}, map[string]map[string]any{"invoiceCreator": {"date": "2026-03-01"}}, nil, 30*time.Second)
	v := waitDone(t, eng, id)
	served := workers.stop()
	if v.Status != instance.Completed || v.Variables["date"] != "2026-03-01" {
		t.Fatalf("instance %s: %s %+v %v", id, v.Status, v.Failure, v.Variables)
	}
	if len(served) != 1 || served[0].Node != "Task_06z99p1" {
		t.Fatalf("jobs %+v", served)
	}
}
