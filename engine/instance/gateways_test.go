package instance

import (
	"slices"
	"testing"

	"github.com/jetbpm/jetbpm/engine/model"
)

// route builds start → xor → {a, b, c} each ending, with the given
// conditions on the flows to a and b and, when withDefault, a default to c.
func route(t *testing.T, condA, condB string, withDefault bool) *model.Builder {
	t.Helper()
	b := model.NewBuilder("route").
		StartEvent("start").ExclusiveGateway("xor").
		ScriptTask("a", "'a'", "took").ScriptTask("b", "'b'", "took").ScriptTask("c", "'c'", "took").
		EndEvent("end").
		Flow("start", "xor").
		Flow("xor", "a", model.When(condA), model.FlowID("toA")).
		Flow("xor", "b", model.When(condB), model.FlowID("toB"))
	if withDefault {
		b.DefaultFlow("xor", "c")
	}
	return b.Sequence("a", "end").Sequence("b", "end").Sequence("c", "end")
}

func TestExclusiveGateway(t *testing.T) {
	tests := []struct {
		name         string
		condA, condB string
		vars         map[string]any
		want         string
	}{
		{"first true wins", "amount > 10", "amount > 5", map[string]any{"amount": 20}, "a"},
		{"declaration order, not specificity", "amount > 5", "amount > 10", map[string]any{"amount": 20}, "a"},
		{"second holds", "amount > 100", "amount > 5", map[string]any{"amount": 20}, "b"},
		{"default when none holds", "amount > 100", "amount > 50", map[string]any{"amount": 20}, "c"},
		{"juel", "${amount > 1000}", "${amount <= 1000}", map[string]any{"amount": 1500}, "a"},
		{"juel false", "${amount > 1000}", "${amount <= 1000}", map[string]any{"amount": 999.5}, "b"},
		{"feel", "= amount > 1000", "= amount <= 1000", map[string]any{"amount": 1500}, "a"},
		{"feel false", "= amount > 1000", "= amount <= 1000", map[string]any{"amount": int32(7)}, "b"},
		{"feel equality", `= kind = "gold"`, "= amount > 0", map[string]any{"kind": "gold", "amount": 1}, "a"},
		{"nested path", "order.total > 10", "true", map[string]any{"order": map[string]any{"total": 11.5}}, "a"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, _ := run(t, route(t, tt.condA, tt.condB, true), tt.vars)
			assertStatus(t, s, Completed)
			assertVars(t, s.Variables(), map[string]any{"took": tt.want})
		})
	}
}

func TestExclusiveGatewayNoFlowFails(t *testing.T) {
	s, _ := run(t, route(t, "amount > 100", "amount > 50", false), map[string]any{"amount": 1})
	inc := assertIncident(t, s, "xor", "no condition holds", "no default flow", `"xor"`)
	if inc.CauseClass != "expression" {
		t.Errorf("cause class %q, want expression", inc.CauseClass)
	}
	assertNoVar(t, s.Variables(), "took")
}

func TestExclusiveGatewayConditionErrorFails(t *testing.T) {
	tests := []struct {
		name string
		vars map[string]any
		cond string
	}{
		{"string compared with number", map[string]any{"amount": "lots"}, "amount > 100"},
		{"nil in arithmetic", map[string]any{}, "missing + 1 > 0"},
		{"not a bool", map[string]any{"amount": 3}, "amount"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, _ := run(t, route(t, tt.cond, "true", true), tt.vars)
			assertIncident(t, s, "xor", `condition of sequence flow "toA"`)
		})
	}
}

// TestConditionalFlowsFromActivity: an activity with several outgoing flows
// takes every unconditional flow and every flow whose condition holds.
func TestConditionalFlowsFromActivity(t *testing.T) {
	b := model.NewBuilder("fan").
		StartEvent("start").Task("work").
		ScriptTask("a", "1", "a").ScriptTask("b", "1", "b").ScriptTask("c", "1", "c").
		EndEvent("end").
		Flow("start", "work").
		Flow("work", "a", model.When("x > 1")).
		Flow("work", "b", model.When("x > 100")).
		Flow("work", "c").
		Sequence("a", "end").Sequence("b", "end").Sequence("c", "end")
	s, _ := run(t, b, map[string]any{"x": 5})
	assertStatus(t, s, Completed)
	assertVars(t, s.Variables(), map[string]any{"a": int64(1), "c": int64(1)})
	assertNoVar(t, s.Variables(), "b")
}

func TestParallelForkJoinWithTimer(t *testing.T) {
	b := model.NewBuilder("par").
		StartEvent("start").ParallelGateway("fork").
		ScriptTask("a", "1", "a").
		TimerCatchEvent("wait", model.Duration("PT10M")).
		ScriptTask("c", "3", "c").
		ParallelGateway("join").ScriptTask("after", "a + c", "sum").EndEvent("end").
		Sequence("start", "fork", "a", "join").
		Sequence("fork", "wait", "join").
		Sequence("fork", "c", "join").
		Sequence("join", "after", "end")
	s, env := run(t, b, nil)
	assertStatus(t, s, Active)
	if got := s.ActiveNodes(); !sameNodes(got, []string{"wait", "join"}) {
		t.Fatalf("ActiveNodes = %v, want wait and join", got)
	}
	var joining int
	for _, tr := range s.Tracks {
		if tr.Node == "join" {
			joining++
			if tr.State != Joining {
				t.Errorf("track at join is %s", tr.State)
			}
		}
	}
	if joining != 2 {
		t.Errorf("tracks at join = %d, want 2", joining)
	}
	assertNoVar(t, s.Variables(), "sum")

	fire(t, s, env, "wait")
	assertStatus(t, s, Completed)
	assertVars(t, s.Variables(), map[string]any{"sum": int64(4)})
}

// TestParallelJoinCountsFlows: two tokens arriving on the same flow do not
// satisfy a join; each firing of the join consumes one token per incoming
// flow.
func TestParallelJoinCountsFlows(t *testing.T) {
	b := model.NewBuilder("join").
		StartEvent("start").ParallelGateway("fork").
		ExclusiveGateway("merge").Task("again"). // two tokens pass here
		TimerCatchEvent("t1", model.Duration("PT1M")).
		TimerCatchEvent("t2", model.Duration("PT2M")).
		ExclusiveGateway("merge2").
		ParallelGateway("join").
		ScriptTask("count", "(passed ?? 0) + 1", "passed").EndEvent("end").
		Flow("start", "fork").
		Flow("fork", "merge").Flow("fork", "merge").
		Flow("fork", "t1").Flow("fork", "t2").
		Flow("merge", "again").
		Flow("again", "join", model.FlowID("fromAgain")).
		Flow("t1", "merge2").Flow("t2", "merge2").
		Flow("merge2", "join", model.FlowID("fromTimers")).
		Sequence("join", "count", "end")
	s, env := run(t, b, nil)
	assertStatus(t, s, Active)
	joinTracks := func() (fromAgain, fromTimers int) {
		for _, tr := range s.Tracks {
			if tr.Node == "join" {
				switch tr.Flow {
				case "fromAgain":
					fromAgain++
				case "fromTimers":
					fromTimers++
				}
			}
		}
		return
	}
	if a, tm := joinTracks(); a != 2 || tm != 0 {
		t.Fatalf("join holds %d+%d tokens, want 2 from again, 0 from timers", a, tm)
	}
	assertNoVar(t, s.Variables(), "passed")

	fire(t, s, env, "t1")
	assertStatus(t, s, Active)
	assertVars(t, s.Variables(), map[string]any{"passed": int64(1)})
	if a, tm := joinTracks(); a != 1 || tm != 0 {
		t.Fatalf("after the first join: %d+%d tokens, want 1+0", a, tm)
	}

	fire(t, s, env, "t2")
	assertStatus(t, s, Completed)
	assertVars(t, s.Variables(), map[string]any{"passed": int64(2)})
}

// TestParallelJoinLoop: a token that loops back to the join through the
// same flow is not a token of the other flow.
func TestParallelJoinLoopArrivals(t *testing.T) {
	b := model.NewBuilder("loopjoin").
		StartEvent("start").ParallelGateway("fork").
		ExclusiveGateway("merge").ScriptTask("inc", "(n ?? 0) + 1", "n").ParallelGateway("split").
		TimerCatchEvent("slow", model.Duration("PT1H")).
		ParallelGateway("join").EndEvent("end").
		Flow("start", "fork").
		Flow("fork", "merge").Flow("fork", "slow").
		Flow("merge", "inc").Flow("inc", "split").
		// split sends one token to the join and, while n < 2, one back round the loop
		Flow("split", "join", model.FlowID("loopFlow")).
		Flow("split", "loopBack").
		Flow("slow", "join", model.FlowID("slowFlow")).
		Sequence("join", "end")
	b.ExclusiveGateway("loopBack").EndEvent("stop").
		Flow("loopBack", "merge", model.When("n < 2")).
		DefaultFlow("loopBack", "stop")
	s, env := run(t, b, nil)
	assertStatus(t, s, Active)
	var atJoin []string
	for _, tr := range s.Tracks {
		if tr.Node == "join" {
			atJoin = append(atJoin, tr.Flow)
		}
	}
	if !slices.Equal(atJoin, []string{"loopFlow", "loopFlow"}) {
		t.Fatalf("tokens at join by flow: %v, want two on loopFlow", atJoin)
	}
	fire(t, s, env, "slow")
	// One loop token and the slow token are joined; the second loop token
	// stays, so the instance does not complete.
	assertStatus(t, s, Active)
	if got := s.ActiveNodes(); !slices.Equal(got, []string{"join"}) || len(s.Tracks) != 1 || s.Tracks[0].Flow != "loopFlow" {
		t.Errorf("after join: nodes %v tracks %d", got, len(s.Tracks))
	}
}
