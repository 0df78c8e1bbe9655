package engine_test

import (
	"slices"
	"testing"

	"github.com/jetbpm/jetbpm/engine"
	"github.com/jetbpm/jetbpm/engine/instance"
	"github.com/jetbpm/jetbpm/engine/model"
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
	if _, err := eng.CompleteTask(tctx(t), taskAt(t, eng, "c-1", "other"), "ann", map[string]any{"cancel": true, "level": 2}); err != nil {
		t.Fatal(err)
	}
	v := waitFor(t, eng, "c-1", "the boundary, the event sub-process and the catch to fire", func(v *engine.InstanceView) bool {
		return slices.Contains(v.ActiveNodes, "stopped") && slices.Contains(v.ActiveNodes, "noted") && slices.Contains(v.ActiveNodes, "after")
	})
	if slices.Contains(v.ActiveNodes, "work") {
		t.Fatalf("work is still active: %v", v.ActiveNodes)
	}
	if rec, err := eng.Task(tctx(t), work); err != nil || rec.State != instance.TaskCanceled {
		t.Fatalf("work's task %+v, %v", rec, err)
	}
	for _, node := range []string{"stopped", "noted", "after"} {
		if _, err := eng.CompleteTask(tctx(t), taskAt(t, eng, "c-1", node), "ann", nil); err != nil {
			t.Fatal(err)
		}
	}
	if v := waitDone(t, eng, "c-1"); v.Status != instance.Completed {
		t.Fatalf("c-1: %s %+v", v.Status, v.Failure)
	}

	// Nothing holds at start: the catch waits; a write that makes its
	// condition true in a later step moves it on.
	startTask(t, eng, "cond", "c-2", map[string]any{"ready": false, "level": 0})
	if _, err := eng.CompleteTask(tctx(t), taskAt(t, eng, "c-2", "other"), "ann", nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, eng, "c-2", "the catch to wait", func(v *engine.InstanceView) bool { return slices.Contains(v.ActiveNodes, "wait") })
	if _, err := eng.CompleteTask(tctx(t), taskAt(t, eng, "c-2", "work"), "ann", map[string]any{"ready": true}); err != nil {
		t.Fatal(err)
	}
	if _, err := eng.CompleteTask(tctx(t), taskAt(t, eng, "c-2", "after"), "ann", nil); err != nil {
		t.Fatal(err)
	}
	if v := waitDone(t, eng, "c-2"); v.Status != instance.Completed || v.Variables["ready"] != true {
		t.Fatalf("c-2: %s %+v %v", v.Status, v.Failure, v.Variables)
	}
}
