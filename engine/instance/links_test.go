package instance

import (
	"slices"
	"testing"

	"github.com/jetbpm/jetbpm/engine/model"
)

// A link throw moves its token to the catch of its name, which goes on;
// links may point backwards, making a loop.
func TestLinkEvents(t *testing.T) {
	b := model.NewBuilder("p").StartEvent("s").LinkCatchEvent("top", "again").ScriptTask("round", "rounds + 1", "rounds").
		ExclusiveGateway("more?").LinkThrowEvent("back", "again").LinkThrowEvent("out", "done").
		LinkCatchEvent("finish", "done").ScriptTask("after", "rounds * 10", "total").EndEvent("e").
		Flow("s", "round").Flow("top", "round").Flow("round", "more?").
		Flow("more?", "back", model.When("rounds < 3")).DefaultFlow("more?", "out").Sequence("finish", "after", "e")
	s, _ := run(t, b, map[string]any{"rounds": 0})
	assertStatus(t, s, Completed)
	assertVars(t, s.Variables(), map[string]any{"rounds": int64(3), "total": int64(30)})
}

// A link inside a sub-process stays in its activation.
func TestLinkInSubProcess(t *testing.T) {
	b := model.NewBuilder("p").StartEvent("s").EndEvent("e").Sequence("s", "sub", "e")
	b.SubProcess("sub").StartEvent("ss").LinkThrowEvent("jump", "l").LinkCatchEvent("land", "l").
		TimerCatchEvent("wait", model.Duration("PT1M")).EndEvent("se").
		Flow("ss", "jump").Sequence("land", "wait", "se")
	s, env := run(t, b, nil)
	if got := s.ActiveNodes(); !slices.Equal(got, []string{"sub", "wait"}) {
		t.Fatalf("active nodes %v", got)
	}
	if tr := tracksAt(s, "wait")[0]; tr.Scope != subScope(t, s).ID {
		t.Errorf("token at wait in scope %s, want the sub-process's", tr.Scope)
	}
	fire(t, s, env, "wait")
	assertStatus(t, s, Completed)
}

// A none throw event passes its token on through its mappings: its
// inputs are local, its outputs written to the process (a milestone).
func TestMilestone(t *testing.T) {
	b := model.NewBuilder("p").StartEvent("s").
		ThrowEvent("reached", model.Input("step", "'shipped'"), model.Output("milestone", "step + ' at ' + where")).
		EndEvent("e").Sequence("s", "reached", "e")
	s, _ := run(t, b, map[string]any{"where": "dock 4"})
	assertStatus(t, s, Completed)
	assertVars(t, s.Variables(), map[string]any{"milestone": "shipped at dock 4"})
	assertNoVar(t, s.Variables(), "step")

	b = model.NewBuilder("p").StartEvent("s").ThrowEvent("reached", model.Output("m", "missing.field")).
		EndEvent("e").Sequence("s", "reached", "e")
	s, _ = run(t, b, nil)
	assertIncident(t, s, "reached", `output mapping "m"`)
}
