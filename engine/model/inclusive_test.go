package model_test

import (
	"strings"
	"testing"

	"github.com/jetbpm/jetbpm/engine/model"
)

// reachProcess has an inclusive join "join" fed by
//   - "a" straight from the fork,
//   - "b", whose error boundary "caught" leads to "fix" and on to the join,
//   - "c", whose timer boundary "late" leads away to "away",
//   - "d", which leads away, but whose message boundary "msg" leads to the join,
//   - a link: "jump" throws link "l", "land" catches it and flows on,
//   - "sub", a sub-process whose inner task "inner" is in another scope,
//
// and, after the join, "again" loops back into it through "more?". "j2" is
// a second inclusive join on no cycle; "solo" an inclusive gateway with one
// incoming flow (a fork only).
func reachProcess() *model.Builder {
	b := model.NewBuilder("p").StartEvent("s").InclusiveGateway("fork").
		Task("a").Task("b").Task("fix").Task("c").Task("away").EndEvent("gone").
		ThrowEvent("pre").LinkThrowEvent("jump", "l").LinkCatchEvent("land", "l").
		InclusiveGateway("join").Task("again").ExclusiveGateway("more?").
		InclusiveGateway("j2").InclusiveGateway("solo").Task("after").EndEvent("e").
		Task("d").EndEvent("gone2").
		ErrorBoundary("caught", "b", "").TimerBoundary("late", "c", model.Duration("PT1H"), true).
		MessageBoundary("msg", "d", "m", "key", false)
	b.SubProcess("sub").StartEvent("ss").Task("inner").EndEvent("se").Sequence("ss", "inner", "se")
	return b.Flow("s", "fork").
		Flow("fork", "a").Flow("a", "join").
		Flow("fork", "b").Flow("b", "join").Flow("caught", "fix").Flow("fix", "join").
		Flow("fork", "c").Flow("c", "join").Flow("late", "away").Flow("away", "gone").
		Flow("fork", "d").Flow("d", "gone2").Flow("msg", "join").
		Flow("fork", "pre").Flow("pre", "jump").Flow("land", "join").
		Flow("fork", "sub").Flow("sub", "join").
		Flow("join", "again").Flow("again", "more?").Flow("more?", "join", model.When("more")).DefaultFlow("more?", "j2").
		Flow("fork", "j2").Flow("j2", "solo").Flow("solo", "after").Flow("after", "e")
}

func TestInclusiveJoinReach(t *testing.T) {
	p, err := reachProcess().Build()
	if err != nil {
		t.Fatal(err)
	}
	checkReach(t, p)

	c := decoded(p) // the stored form: the sets are rebuilt by Validate
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	checkReach(t, c)
}

func checkReach(t *testing.T, p *model.Process) {
	t.Helper()
	for _, tt := range []struct {
		join string
		from map[string]bool
	}{
		{"join", map[string]bool{
			"s": true, "fork": true, "a": true, "b": true, "caught": true, "fix": true,
			"c": true,              // its normal flow leads to the join; its boundary does not
			"d": true, "msg": true, // d only through its boundary
			"pre": true, "jump": true, "land": true, "sub": true,
			"join": true, "again": true, "more?": true, // the loop back into the join
			"late": false, "away": false, "gone": false, "gone2": false, "inner": false, "ss": false, "se": false,
			"j2": false, "solo": false, "after": false, "e": false,
		}},
		{"j2", map[string]bool{
			"s": true, "fork": true, "more?": true, "again": true, "join": true, "a": true, "land": true, "jump": true,
			"j2":   false, // on no cycle: it does not reach itself
			"solo": false, "after": false, "late": false, "away": false, "inner": false,
		}},
	} {
		if !p.IsInclusiveJoin(tt.join) {
			t.Errorf("IsInclusiveJoin(%s) = false", tt.join)
		}
		for from, want := range tt.from {
			if got := p.Reaches(from, tt.join); got != want {
				t.Errorf("Reaches(%s, %s) = %v, want %v", from, tt.join, got, want)
			}
		}
	}
	for _, id := range []string{"fork", "solo", "more?", "a", "nope"} {
		if p.IsInclusiveJoin(id) {
			t.Errorf("IsInclusiveJoin(%s) = true: it is no inclusive gateway with two incoming flows", id)
		}
		if p.Reaches("s", id) {
			t.Errorf("Reaches(s, %s) = true for a node that is no inclusive join", id)
		}
	}
}

// A join inside a sub-process reaches only nodes of its own scope.
func TestInclusiveJoinReachStaysInItsScope(t *testing.T) {
	b := model.NewBuilder("p").StartEvent("s").Task("before").EndEvent("e")
	b.SubProcess("sub").StartEvent("ss").InclusiveGateway("fork").Task("x").Task("y").InclusiveGateway("join").EndEvent("se").
		Flow("ss", "fork").Flow("fork", "x").Flow("fork", "y").Flow("x", "join").Flow("y", "join").Flow("join", "se")
	b.Sequence("s", "before", "sub", "e")
	p, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	for from, want := range map[string]bool{"ss": true, "fork": true, "x": true, "y": true, "se": false, "sub": false, "before": false, "s": false} {
		if got := p.Reaches(from, "join"); got != want {
			t.Errorf("Reaches(%s, join) = %v, want %v", from, got, want)
		}
	}
}

func TestInclusiveGatewayValidation(t *testing.T) {
	for _, tt := range []struct {
		name    string
		b       func() *model.Builder
		element string
		msg     string
	}{
		{"no outgoing flow", func() *model.Builder {
			return model.NewBuilder("p").StartEvent("s").InclusiveGateway("g").Flow("s", "g")
		}, "g", "has no outgoing sequence flow"},
		{"default flow with a condition", func() *model.Builder {
			b := model.NewBuilder("p").StartEvent("s").InclusiveGateway("g").EndEvent("e").Flow("s", "g")
			return b.DefaultFlow("g", "e", model.When("x > 1"))
		}, "g", "must not have a condition"},
		{"bad condition", func() *model.Builder {
			return model.NewBuilder("p").StartEvent("s").InclusiveGateway("g").EndEvent("e").Flow("s", "g").
				Flow("g", "e", model.When("x >"), model.FlowID("bad"))
		}, "bad", "condition"},
		{"output mapping", func() *model.Builder {
			return model.NewBuilder("p").StartEvent("s").InclusiveGateway("g", model.Output("x", "1")).EndEvent("e").Sequence("s", "g", "e")
		}, "g", "output mappings"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.b().Build()
			for _, e := range problems(t, err) {
				if e.Element == tt.element && strings.Contains(e.Msg, tt.msg) {
					return
				}
			}
			t.Errorf("no problem on %q containing %q; got %v", tt.element, tt.msg, err)
		})
	}

	// Conditions and a default flow are what an inclusive fork is for.
	b := model.NewBuilder("p").StartEvent("s").InclusiveGateway("g").Task("a").Task("b").EndEvent("e").
		Flow("s", "g").Flow("g", "a", model.When("x > 1")).DefaultFlow("g", "b").Sequence("a", "e").Sequence("b", "e")
	if _, err := b.Build(); err != nil {
		t.Fatal(err)
	}
}
