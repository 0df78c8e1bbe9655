package instance

import (
	"slices"
	"testing"
	"time"

	"github.com/jetbpm/jetbpm/engine/model"
)

// branches forks into "charge" (a script that fails: an incident) and
// "ship" (a timer, then a script), joined at "join" before the end.
func branches(b *model.Builder) *model.Builder {
	return b.ParallelGateway("fork").
		ScriptTask("charge", "missing + 1", "charged").
		TimerCatchEvent("wait", model.Duration("PT1M")).ScriptTask("ship", `"yes"`, "shipped").
		ParallelGateway("join").ScriptTask("done", `"all"`, "joined").
		Flow("fork", "charge").Flow("charge", "join", model.FlowID("fromCharge")).
		Flow("fork", "wait").Sequence("wait", "ship").Flow("ship", "join", model.FlowID("fromShip")).
		Flow("join", "done")
}

func assertStuck(t *testing.T, s *State, want ...StuckJoin) {
	t.Helper()
	if len(s.Stuck) != len(want) {
		t.Fatalf("stuck joins %+v, want %+v", s.Stuck, want)
	}
	for i, w := range want {
		g := s.Stuck[i]
		if g.Node != w.Node || g.Scope != w.Scope || !slices.Equal(g.Arrived, w.Arrived) || !slices.Equal(g.Missing, w.Missing) ||
			!slices.Equal(g.Abandoned, w.Abandoned) || !g.Since.Equal(w.Since) {
			t.Errorf("stuck join %d = %+v, want %+v", i, g, w)
		}
	}
}

// Abandoning one branch's incident strands its sibling at the join: once
// the sibling arrives, every token left waits at a join that can never
// fire, and the state says so, naming the abandoned incident; cancelling
// the instance ends it.
func TestAbandonedBranchStrandsTheJoin(t *testing.T) {
	b := model.NewBuilder("p").StartEvent("s")
	b = branches(b).EndEvent("e").Flow("s", "fork").Flow("done", "e")
	s, env := run(t, b, nil)
	inc := assertIncident(t, s, "charge")
	assertStuck(t, s)

	env.Now = t0.Add(10 * time.Second)
	apply(t, s, env, command(IncidentAbandon, inc, "c1"))
	assertStatus(t, s, Active)
	assertStuck(t, s) // ship is still on its way: nothing is stuck yet

	fire(t, s, env, "wait")
	assertStatus(t, s, Active)
	if got := s.ActiveNodes(); !slices.Equal(got, []string{"join"}) {
		t.Fatalf("active nodes %v, want the token at the join", got)
	}
	stuckAt := env.Now
	assertStuck(t, s, StuckJoin{Node: "join", Scope: RootScope, Arrived: []string{"fromShip"}, Missing: []string{"fromCharge"},
		Abandoned: []string{inc.ID}, Since: stuckAt})

	// A step that changes nothing there keeps when it got stuck.
	env.Now = stuckAt.Add(time.Hour)
	apply(t, s, env, timerEvent(&Wait{ID: "nope"}))
	assertStuck(t, s, StuckJoin{Node: "join", Scope: RootScope, Arrived: []string{"fromShip"}, Missing: []string{"fromCharge"},
		Abandoned: []string{inc.ID}, Since: stuckAt})

	apply(t, s, env, Event{ID: "cancel", Kind: Cancel, Reason: "stuck"})
	assertStatus(t, s, Terminated)
	assertStuck(t, s)
	if len(s.Tracks) != 0 || len(s.Waits) != 0 {
		t.Fatalf("terminated instance keeps tracks %v / waits %s", s.ActiveNodes(), dumpWaits(s))
	}
}

// A sub-process whose tokens all wait at its join is stuck even while the
// process around it still runs; the join's scope is the sub-process's.
func TestStuckJoinInsideSubProcess(t *testing.T) {
	b := model.NewBuilder("p").StartEvent("s").ParallelGateway("split").
		TimerCatchEvent("elsewhere", model.Duration("PT1H")).EndEvent("e2").Sequence("split", "elsewhere", "e2")
	branches(b.SubProcess("sub").StartEvent("ss")).EndEvent("se").Flow("ss", "fork").Flow("done", "se")
	b.EndEvent("e").Sequence("s", "split", "sub", "e")
	s, env := run(t, b, nil)
	inc := assertIncident(t, s, "charge")
	sub := s.track(inc.Track).Scope
	apply(t, s, env, command(IncidentAbandon, inc, "c1"))
	fire(t, s, env, "wait")
	stuck := StuckJoin{Node: "join", Scope: sub, Arrived: []string{"fromShip"}, Missing: []string{"fromCharge"}, Abandoned: []string{inc.ID}, Since: env.Now}
	assertStuck(t, s, stuck)
	if !slices.Contains(s.ActiveNodes(), "elsewhere") {
		t.Fatalf("active nodes %v: the other branch should still wait", s.ActiveNodes())
	}

	// The other branch ends; the sub-process still cannot.
	fire(t, s, env, "elsewhere")
	assertStatus(t, s, Active)
	assertStuck(t, s, stuck)
}

// A parallel join fed by an exclusive split (a modelling error) deadlocks
// without any incident: it is reported as stuck too.
func TestExclusiveSplitIntoParallelJoinIsStuck(t *testing.T) {
	b := model.NewBuilder("p").StartEvent("s").ExclusiveGateway("xor").
		ScriptTask("a", `"a"`, "took").ScriptTask("b", `"b"`, "took").
		ParallelGateway("join").EndEvent("e").
		Flow("s", "xor").Flow("xor", "a", model.When("pick == 'a'")).DefaultFlow("xor", "b").
		Flow("a", "join", model.FlowID("fromA")).Flow("b", "join", model.FlowID("fromB")).Flow("join", "e")
	s, _ := run(t, b, map[string]any{"pick": "a"})
	assertStatus(t, s, Active)
	assertStuck(t, s, StuckJoin{Node: "join", Scope: RootScope, Arrived: []string{"fromA"}, Missing: []string{"fromB"}, Since: t0})
}
