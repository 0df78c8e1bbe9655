package instance

import (
	"slices"
	"testing"

	"github.com/jetbpm/jetbpm/engine/model"
)

// TestPassedIsTheCompletedPath: the nodes left along a flow, the flows
// taken and the end events reached, once each however often a loop
// passes; not the branch not taken, not the node still active.
func TestPassedIsTheCompletedPath(t *testing.T) {
	b := model.NewBuilder("path").StartEvent("s").
		ScriptTask("count", "n + 1", "n").
		ExclusiveGateway("again").
		ParallelGateway("fork").ParallelGateway("join").
		UserTask("review").ScriptTask("note", "true", "noted").
		ScriptTask("never", "true", "x").
		EndEvent("e").EndEvent("e2").
		Flow("s", "count", model.FlowID("toCount")).
		Flow("count", "again", model.FlowID("toAgain")).
		Flow("again", "count", model.FlowID("loop"), model.When("n < 3")).
		DefaultFlow("again", "fork", model.FlowID("toFork")).
		Flow("fork", "review", model.FlowID("toReview")).
		Flow("fork", "note", model.FlowID("toNote")).
		Flow("review", "join", model.FlowID("reviewDone")).
		Flow("note", "join", model.FlowID("noteDone")).
		Flow("join", "e", model.FlowID("toEnd")).
		Flow("never", "e2", model.FlowID("neverFlow"))
	s, env := run(t, b, map[string]any{"n": 0})
	want := []string{"again", "count", "fork", "loop", "note", "noteDone", "s", "toAgain", "toCount", "toFork", "toNote", "toReview"}
	if !slices.Equal(s.Passed, want) {
		t.Fatalf("passed at the user task = %v, want %v", s.Passed, want)
	}
	apply(t, s, env, taskCmd("c1", openTask(t, s, "review").ID, TaskComplete, "alice"))
	assertStatus(t, s, Completed)
	want = append(want, "e", "join", "review", "reviewDone", "toEnd")
	slices.Sort(want)
	if !slices.Equal(s.Passed, want) {
		t.Fatalf("passed at the end = %v, want %v", s.Passed, want)
	}
}
