package instance

import (
	"slices"
	"testing"

	"github.com/jetbpm/jetbpm/engine/model"
)

// tracksAt returns the tracks at node, in track order.
func tracksAt(s *State, node string) []*Track {
	var out []*Track
	for _, t := range s.Tracks {
		if t.Node == node {
			out = append(out, t)
		}
	}
	return out
}

// assertJoining checks that n tokens wait at join, all joining.
func assertJoining(t *testing.T, s *State, join string, n int) {
	t.Helper()
	at := tracksAt(s, join)
	if len(at) != n {
		t.Fatalf("%d tokens at %s, want %d (active %v, waits %s)", len(at), join, n, s.ActiveNodes(), dumpWaits(s))
	}
	for _, tr := range at {
		if tr.State != Joining {
			t.Errorf("token %s at %s is %s, want joining", tr.ID, join, tr.State)
		}
	}
}

// fork is start → inclusive fork "or" → scripts a, b, c (each sets its
// name) → inclusive join "join" → "after" (counts its runs) → end, with
// conditions condA, condB on the flows to a and b and, when withDefault,
// c the default flow; else c's flow has condition "false".
func inclusiveFork(condA, condB string, withDefault bool) *model.Builder {
	b := model.NewBuilder("or").StartEvent("s").InclusiveGateway("or").
		ScriptTask("a", "true", "a").ScriptTask("b", "true", "b").ScriptTask("c", "true", "c").
		InclusiveGateway("join").ScriptTask("after", "fired + 1", "fired").EndEvent("e").
		Flow("s", "or").
		Flow("or", "a", model.When(condA)).Flow("or", "b", model.When(condB))
	if withDefault {
		b.DefaultFlow("or", "c")
	} else {
		b.Flow("or", "c", model.When("false"))
	}
	return b.Sequence("a", "join").Sequence("b", "join").Sequence("c", "join").Sequence("join", "after", "e")
}

func TestInclusiveFork(t *testing.T) {
	for _, tt := range []struct {
		name         string
		condA, condB string
		vars         map[string]any
		took         []string
	}{
		{"every flow whose condition holds", "x > 1", "x > 2", map[string]any{"x": 5}, []string{"a", "b"}},
		{"one holds", "x > 1", "x > 10", map[string]any{"x": 5}, []string{"a"}},
		{"none holds: the default", "x > 10", "x > 20", map[string]any{"x": 5}, []string{"c"}},
		{"juel", "${x > 1}", "${x > 10}", map[string]any{"x": 5}, []string{"a"}},
		{"feel", "= x > 1", "= x > 2", map[string]any{"x": 5}, []string{"a", "b"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			vars := map[string]any{"fired": 0}
			for k, v := range tt.vars {
				vars[k] = v
			}
			s, _ := run(t, inclusiveFork(tt.condA, tt.condB, true), vars)
			assertStatus(t, s, Completed)
			for _, n := range []string{"a", "b", "c"} {
				_, ran := s.Variables()[n]
				if ran != slices.Contains(tt.took, n) {
					t.Errorf("branch %s ran = %v, want branches %v", n, ran, tt.took)
				}
			}
			// The join waits for every branch taken and fires once.
			assertVars(t, s.Variables(), map[string]any{"fired": int64(1)})
		})
	}
}

func TestInclusiveForkWithoutFlowRaisesIncident(t *testing.T) {
	s, _ := run(t, inclusiveFork("x > 10", "x > 20", false), map[string]any{"x": 5, "fired": 0})
	inc := assertIncident(t, s, "or", `inclusive gateway "or": no condition holds and there is no default flow`)
	if inc.CauseClass != "expression" {
		t.Errorf("cause class %q, want expression", inc.CauseClass)
	}
	assertNoVar(t, s.Variables(), "a", "b", "c")

	s, _ = run(t, inclusiveFork("x > 1", "x.y > 2", true), map[string]any{"x": 5, "fired": 0})
	assertIncident(t, s, "or", "condition of sequence flow")
	assertNoVar(t, s.Variables(), "a", "b", "c") // nothing is taken before every condition is known
}

// A branch that the fork did not take is not waited for; a taken branch
// still on its way is.
func TestInclusiveJoinWaitsForTakenBranchesOnly(t *testing.T) {
	b := model.NewBuilder("p").StartEvent("s").InclusiveGateway("or").
		ScriptTask("a", "true", "a").TimerCatchEvent("slow", model.Duration("PT1M")).ScriptTask("c", "true", "c").
		InclusiveGateway("join").ScriptTask("after", "fired + 1", "fired").EndEvent("e").
		Flow("s", "or").Flow("or", "a").Flow("or", "slow", model.When("wait")).Flow("or", "c", model.When("false")).
		Sequence("a", "join").Sequence("slow", "join").Sequence("c", "join").Sequence("join", "after", "e")

	s, env := run(t, b, map[string]any{"wait": true, "fired": 0})
	assertStatus(t, s, Active)
	assertJoining(t, s, "join", 1)
	assertVars(t, s.Variables(), map[string]any{"fired": int64(0)})
	fire(t, s, env, "slow")
	assertStatus(t, s, Completed)
	assertVars(t, s.Variables(), map[string]any{"fired": int64(1)})

	s, _ = run(t, b, map[string]any{"wait": false, "fired": 0})
	assertStatus(t, s, Completed)
	assertVars(t, s.Variables(), map[string]any{"fired": int64(1)})
}

// Trap: a branch that leaves through an error boundary never arrives; the
// join fires in the step it left (Zeebe waits forever, camunda/camunda
// 19460).
func TestInclusiveJoinFiresWhenBranchLeavesByErrorBoundary(t *testing.T) {
	b := model.NewBuilder("p").StartEvent("s").InclusiveGateway("or").ScriptTask("a", "true", "a").
		InclusiveGateway("join").ScriptTask("after", "fired + 1", "fired").EndEvent("e").
		ErrorBoundary("oops", "sub", "").ScriptTask("handled", "true", "handled").EndEvent("e2").
		Flow("s", "or").Flow("or", "a").Flow("or", "sub").Sequence("a", "join").Sequence("sub", "join").
		Sequence("join", "after", "e").Sequence("oops", "handled", "e2")
	b.SubProcess("sub").StartEvent("ss").TimerCatchEvent("work", model.Duration("PT1M")).ErrorEndEvent("fail", "E").
		Sequence("ss", "work", "fail")

	s, env := run(t, b, map[string]any{"fired": 0})
	assertJoining(t, s, "join", 1) // the sub-process can still bring a token
	fire(t, s, env, "work")
	assertStatus(t, s, Completed)
	assertVars(t, s.Variables(), map[string]any{"fired": int64(1), "handled": true})
}

// Trap: likewise for an interrupting timer boundary.
func TestInclusiveJoinFiresWhenBranchLeavesByTimerBoundary(t *testing.T) {
	b := model.NewBuilder("p").StartEvent("s").InclusiveGateway("or").ScriptTask("a", "true", "a").
		ServiceTask("slow", "", model.WithWorker("slow")).
		InclusiveGateway("join").ScriptTask("after", "fired + 1", "fired").EndEvent("e").
		TimerBoundary("late", "slow", model.Duration("PT1M"), true).EndEvent("e2").
		Flow("s", "or").Flow("or", "a").Flow("or", "slow").Sequence("a", "join").Sequence("slow", "join").
		Sequence("join", "after", "e").Sequence("late", "e2")

	s, env := run(t, b, map[string]any{"fired": 0})
	assertJoining(t, s, "join", 1)
	fire(t, s, env, "late")
	assertStatus(t, s, Completed)
	assertVars(t, s.Variables(), map[string]any{"fired": int64(1)})
}

// Trap: one incoming flow taken twice. The join takes one token per flow
// per firing; the extra token fires on its own once nothing else can
// reach the join. The instance completes (Zeebe never does, camunda/camunda
// 19464), and a second token on one flow does not stand in for another
// flow's (Camunda 7 counts tokens, not flows).
func TestInclusiveJoinSameFlowTwice(t *testing.T) {
	b := model.NewBuilder("p").StartEvent("s").InclusiveGateway("or").
		ScriptTask("a", "true", "a").TimerCatchEvent("slow", model.Duration("PT1M")).
		InclusiveGateway("join").ScriptTask("after", "fired + 1", "fired").EndEvent("e").
		Flow("s", "or").Flow("or", "a").Flow("or", "a").Flow("or", "slow").
		Flow("a", "join", model.FlowID("fromA")).Flow("slow", "join", model.FlowID("fromSlow")).Sequence("join", "after", "e")

	s, env := run(t, b, map[string]any{"fired": 0})
	assertJoining(t, s, "join", 2)
	for _, tr := range tracksAt(s, "join") {
		if tr.Flow != "fromA" {
			t.Errorf("token %s arrived by %s, want fromA", tr.ID, tr.Flow)
		}
	}
	assertVars(t, s.Variables(), map[string]any{"fired": int64(0)}) // not fired by two tokens of one flow

	fire(t, s, env, "slow")
	assertStatus(t, s, Completed)
	assertVars(t, s.Variables(), map[string]any{"fired": int64(2)}) // fromA+fromSlow, then the other fromA
	assertStuck(t, s)
}

// Trap: a token in a loop that can come back to the join is waited for,
// round after round; when it finally arrives the join fires once.
func TestInclusiveJoinWaitsForLoopToken(t *testing.T) {
	b := model.NewBuilder("p").StartEvent("s").InclusiveGateway("or").ScriptTask("a", "true", "a").
		TimerCatchEvent("review", model.Duration("PT1M")).ScriptTask("round", "rounds + 1", "rounds").ExclusiveGateway("again?").
		InclusiveGateway("join").ScriptTask("after", "fired + 1", "fired").EndEvent("e").
		Flow("s", "or").Flow("or", "a").Flow("or", "review").Sequence("a", "join").
		Sequence("review", "round", "again?").Flow("again?", "review", model.When("rounds < 3")).DefaultFlow("again?", "join").
		Sequence("join", "after", "e")

	s, env := run(t, b, map[string]any{"fired": 0, "rounds": 0})
	for round := 1; round < 3; round++ {
		assertJoining(t, s, "join", 1)
		fire(t, s, env, "review")
		assertStatus(t, s, Active)
		assertVars(t, s.Variables(), map[string]any{"rounds": int64(round), "fired": int64(0)})
	}
	fire(t, s, env, "review")
	assertStatus(t, s, Completed)
	assertVars(t, s.Variables(), map[string]any{"rounds": int64(3), "fired": int64(1)})
}

// A token that could loop back to the join but ends elsewhere instead lets
// the join fire in the step it ended.
func TestInclusiveJoinFiresWhenLoopTokenEndsElsewhere(t *testing.T) {
	b := model.NewBuilder("p").StartEvent("s").ParallelGateway("fork").
		TimerCatchEvent("decide", model.Duration("PT1M")).ExclusiveGateway("join?").EndEvent("elsewhere").
		InclusiveGateway("join").ScriptTask("after", "fired + 1", "fired").EndEvent("e").
		Flow("s", "fork").Flow("fork", "join").Flow("fork", "decide").Flow("decide", "join?").
		Flow("join?", "join", model.When("more")).DefaultFlow("join?", "elsewhere").Sequence("join", "after", "e")

	s, env := run(t, b, map[string]any{"fired": 0, "more": false})
	assertJoining(t, s, "join", 1)
	fire(t, s, env, "decide")
	assertStatus(t, s, Completed)
	assertVars(t, s.Variables(), map[string]any{"fired": int64(1)})
}

// A branch whose incident can still be retried is waited for; abandoning
// the incident lets the join fire in that step, and the instance goes on.
func TestInclusiveJoinAndIncidents(t *testing.T) {
	b := model.NewBuilder("p").StartEvent("s").InclusiveGateway("or").
		ScriptTask("a", "true", "a").ScriptTask("bad", "missing + 1", "b").
		InclusiveGateway("join").TimerCatchEvent("after", model.Duration("PT1M")).EndEvent("e").
		Flow("s", "or").Flow("or", "a").Flow("or", "bad").Sequence("a", "join").Sequence("bad", "join").Sequence("join", "after", "e")

	s, env := run(t, b, nil)
	inc := assertIncident(t, s, "bad", "missing")
	assertJoining(t, s, "join", 1)
	assertStuck(t, s)

	apply(t, s, env, command(IncidentAbandon, inc, "c1"))
	assertStatus(t, s, Active)
	if got := s.ActiveNodes(); !slices.Equal(got, []string{"after"}) {
		t.Fatalf("active nodes %v, want the join fired and the token at after", got)
	}
	fire(t, s, env, "after")
	assertStatus(t, s, Completed)

	// Resolved instead, the branch arrives and the join fires with both.
	s, env = run(t, b, nil)
	inc = assertIncident(t, s, "bad")
	apply(t, s, env, Event{ID: "c2", Kind: IncidentResolve, Incident: inc.ID, Vars: map[string]any{"b": 1}})
	if got := s.ActiveNodes(); !slices.Equal(got, []string{"after"}) {
		t.Fatalf("active nodes %v, want one token at after", got)
	}
	assertVars(t, s.Variables(), map[string]any{"a": true, "b": int64(1)})
}

// An incident on the join's fork is retried at the fork: the token has
// joined already and does not join again, even while another token can
// still reach the join.
func TestInclusiveJoinForkIncidentRetry(t *testing.T) {
	b := model.NewBuilder("p").StartEvent("s").InclusiveGateway("or").
		ScriptTask("a", "true", "a").ScriptTask("b", "true", "b").TimerCatchEvent("later", model.Duration("PT1H")).
		InclusiveGateway("join").ScriptTask("after", "true", "done").EndEvent("e").
		Flow("s", "or").Flow("or", "a").Flow("or", "b").Flow("or", "later").
		Flow("a", "join", model.FlowID("fromA")).Flow("b", "join", model.FlowID("fromB")).Flow("later", "a").
		Flow("join", "after", model.When("go"))

	s, env := run(t, b, map[string]any{"go": false})
	inc := assertIncident(t, s, "join", "no condition holds")
	if inc.Attempts != 1 {
		t.Fatalf("attempts %d", inc.Attempts)
	}
	apply(t, s, env, command(IncidentRetry, inc, "r1"))
	inc = assertIncident(t, s, "join", "no condition holds")
	if inc.Attempts != 2 {
		t.Errorf("attempts %d after a retry, want 2: the retry runs the fork again", inc.Attempts)
	}
	apply(t, s, env, Event{ID: "r2", Kind: IncidentResolve, Incident: inc.ID, Vars: map[string]any{"go": true}})
	assertVars(t, s.Variables(), map[string]any{"done": true})
	if got := s.ActiveNodes(); !slices.Equal(got, []string{"later"}) {
		t.Fatalf("active nodes %v, want only the timer branch left", got)
	}
}

// A sub-process stands for the tokens inside it: the join around it waits
// for it. A join inside a sub-process counts only the tokens of its own
// activation and fires while tokens outside still run.
func TestInclusiveJoinScopes(t *testing.T) {
	b := model.NewBuilder("p").StartEvent("s").InclusiveGateway("or").ScriptTask("a", "true", "a").
		TimerCatchEvent("outside", model.Duration("PT1H")).EndEvent("e2").
		InclusiveGateway("join").ScriptTask("after", "fired + 1", "fired").EndEvent("e").
		Flow("s", "or").Flow("or", "a").Flow("or", "sub").Flow("or", "outside").Flow("outside", "e2").
		Sequence("a", "join").Sequence("sub", "join").Sequence("join", "after", "e")
	b.SubProcess("sub").StartEvent("ss").InclusiveGateway("in").ScriptTask("x", "true", "x").
		TimerCatchEvent("inner", model.Duration("PT1M")).InclusiveGateway("innerJoin").ScriptTask("y", "true", "y").EndEvent("se").
		Flow("ss", "in").Flow("in", "x").Flow("in", "inner").Sequence("x", "innerJoin").Sequence("inner", "innerJoin").
		Sequence("innerJoin", "y", "se")

	s, env := run(t, b, map[string]any{"fired": 0})
	assertJoining(t, s, "join", 1)
	assertJoining(t, s, "innerJoin", 1)
	fire(t, s, env, "inner")
	// The sub-process joined and completed, then the outer join fired;
	// the timer outside either join's way still waits.
	assertVars(t, s.Variables(), map[string]any{"y": true, "fired": int64(1)})
	if got := s.ActiveNodes(); !slices.Equal(got, []string{"outside"}) {
		t.Fatalf("active nodes %v, want only the outside timer", got)
	}
}

// A non-interrupting boundary's branch and its activity both reach the
// join: it waits for both.
func TestInclusiveJoinNonInterruptingBoundary(t *testing.T) {
	b := model.NewBuilder("p").StartEvent("s").InclusiveGateway("or").
		ServiceTask("work", "", model.WithWorker("w")).ScriptTask("remind", "true", "reminded").
		InclusiveGateway("join").ScriptTask("after", "fired + 1", "fired").EndEvent("e").
		TimerBoundary("nudge", "work", model.Duration("PT1M"), false).
		Flow("s", "or").Flow("or", "work").Sequence("work", "join").Sequence("nudge", "remind", "join").
		Sequence("join", "after", "e")

	s, env := run(t, b, map[string]any{"fired": 0})
	fire(t, s, env, "nudge")
	assertJoining(t, s, "join", 1) // the reminder arrived; the task can still
	w := waitAt(t, s, "work")
	apply(t, s, env, jobDoneEvent(w, nil))
	assertStatus(t, s, Completed)
	assertVars(t, s.Variables(), map[string]any{"fired": int64(1), "reminded": true})
}

// A link throw reaches the join through its catch: the join waits for a
// token before the throw.
func TestInclusiveJoinThroughLink(t *testing.T) {
	b := model.NewBuilder("p").StartEvent("s").InclusiveGateway("or").ScriptTask("a", "true", "a").
		TimerCatchEvent("slow", model.Duration("PT1M")).LinkThrowEvent("go", "l").LinkCatchEvent("land", "l").
		InclusiveGateway("join").ScriptTask("after", "fired + 1", "fired").EndEvent("e").
		Flow("s", "or").Flow("or", "a").Flow("or", "slow").Flow("slow", "go").Sequence("a", "join").
		Flow("land", "join").Sequence("join", "after", "e")

	s, env := run(t, b, map[string]any{"fired": 0})
	assertJoining(t, s, "join", 1)
	fire(t, s, env, "slow")
	assertStatus(t, s, Completed)
	assertVars(t, s.Variables(), map[string]any{"fired": int64(1)})
}

// An inclusive join waiting on a parallel join that can never fire is
// stuck with it: every token of the scope waits at a join.
func TestInclusiveJoinStuckBehindParallelJoin(t *testing.T) {
	b := model.NewBuilder("p").StartEvent("s").ParallelGateway("fork").ExclusiveGateway("xor").
		ScriptTask("a", "true", "a").ScriptTask("b", "true", "b").ParallelGateway("and").
		InclusiveGateway("join").EndEvent("e").
		Flow("s", "fork").Flow("fork", "join", model.FlowID("direct")).Flow("fork", "xor").
		Flow("xor", "a", model.When("pick == 'a'")).DefaultFlow("xor", "b").
		Flow("a", "and", model.FlowID("fromA")).Flow("b", "and", model.FlowID("fromB")).
		Flow("and", "join", model.FlowID("fromAnd")).Flow("join", "e")

	s, _ := run(t, b, map[string]any{"pick": "a"})
	assertStatus(t, s, Active)
	want := []StuckJoin{
		{Node: "join", Scope: RootScope, Arrived: []string{"direct"}, Missing: []string{"fromAnd"}, Since: t0},
		{Node: "and", Scope: RootScope, Arrived: []string{"fromA"}, Missing: []string{"fromB"}, Since: t0},
	}
	if s.Stuck[0].Node == "and" {
		want[0], want[1] = want[1], want[0]
	}
	assertStuck(t, s, want...)
}
