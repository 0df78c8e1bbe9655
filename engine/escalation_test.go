package engine_test

import (
	"testing"

	"github.com/jetbpm/jetbpm/engine/instance"
	"github.com/jetbpm/jetbpm/engine/model"
	"github.com/jetbpm/jetbpm/streams/streamstest"
)

// A called process escalates and ends in the same step: the parent's
// non-interrupting escalation boundary runs, and the call activity still
// hears of the child's end (two reports from one child, both delivered).
func TestEscalationFromACalledProcessThenItsEnd(t *testing.T) {
	t.Parallel()
	env := streamstest.Start(t)
	eng := openEngine(t, env, nil)
	ctx := bounded(t)
	child := build(t, model.NewBuilder("late-child").StartEvent("s").EscalationThrowEvent("up", "LATE").EndEvent("e").Sequence("s", "up", "e"))
	parent := build(t, model.NewBuilder("late-parent").StartEvent("s").CallActivity("call", "late-child").EndEvent("e").Sequence("s", "call", "e").
		EscalationBoundary("late", "call", "LATE", false).ScriptTask("note", "true", "late").EndEvent("lateEnd").Sequence("late", "note", "lateEnd"))
	if _, err := eng.DeployAll(ctx, child, parent); err != nil {
		t.Fatal(err)
	}
	id, err := eng.Start(ctx, "late-parent", nil)
	if err != nil {
		t.Fatal(err)
	}
	v := waitDone(t, eng, id)
	if v.Status != instance.Completed || v.Variables["late"] != true {
		t.Fatalf("parent %+v: want completed, through the escalation boundary too", v)
	}
}
