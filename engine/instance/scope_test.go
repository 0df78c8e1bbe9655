package instance

import (
	"context"
	"reflect"
	"slices"
	"testing"

	"github.com/jetbpm/jetbpm/engine/model"
)

func TestSubProcessScope(t *testing.T) {
	for _, withOutput := range []bool{false, true} {
		name := "no output"
		if withOutput {
			name = "output copies out"
		}
		t.Run(name, func(t *testing.T) {
			opts := []model.NodeOption{model.Input("local", "amount * 2")}
			if withOutput {
				opts = append(opts, model.Output("copied", "local"))
			}
			b := model.NewBuilder("sp").StartEvent("start")
			b.SubProcess("sub", opts...).
				StartEvent("s_start").
				ScriptTask("bump", "local + 1", "local").  // defined in the sub scope: stays there
				ScriptTask("make", "local * 10", "fresh"). // new: goes to the root
				TimerCatchEvent("pause", model.Duration("PT1M")).
				EndEvent("s_end").
				Sequence("s_start", "bump", "make", "pause", "s_end")
			b.ScriptTask("after", "local ?? 'gone'", "localAfter").EndEvent("end").
				Sequence("start", "sub", "after", "end")
			s, env := run(t, b, map[string]any{"amount": 5})
			assertStatus(t, s, Active)
			sc := subScope(t, s)
			if sc.Parent != RootScope || s.track(sc.Owner) == nil || s.track(sc.Owner).Node != "sub" {
				t.Errorf("scope %+v: parent/owner wrong", sc)
			}
			if want := map[string]any{"local": int64(11)}; !reflect.DeepEqual(sc.Vars, want) {
				t.Errorf("sub scope vars = %v, want %v", sc.Vars, want)
			}
			assertVars(t, s.Variables(), map[string]any{"fresh": int64(110), "amount": int64(5)})
			assertNoVar(t, s.Variables(), "local")
			if got := s.ActiveNodes(); !sameNodes(got, []string{"sub", "pause"}) {
				t.Errorf("ActiveNodes = %v", got)
			}

			fire(t, s, env, "pause")
			assertStatus(t, s, Completed)
			if len(s.Scopes) != 1 {
				t.Errorf("scopes left: %d", len(s.Scopes))
			}
			assertVars(t, s.Variables(), map[string]any{"localAfter": "gone", "fresh": int64(110)})
			assertNoVar(t, s.Variables(), "local")
			if withOutput {
				assertVars(t, s.Variables(), map[string]any{"copied": int64(11)})
			} else {
				assertNoVar(t, s.Variables(), "copied")
			}
		})
	}
}

// TestServiceResultsPropagate: results update the nearest scope that defines
// a variable; new variables go to the root scope.
func TestServiceResultsPropagate(t *testing.T) {
	var input map[string]any
	x := newExec(map[string]opFunc{"op": func(_ context.Context, c Call) (map[string]any, error) {
		input = c.Input
		return map[string]any{"local": 2, "x": 3, "shadow": "inner", "fresh": 4}, nil
	}})
	b := model.NewBuilder("prop").StartEvent("start")
	b.SubProcess("sub", model.Input("local", "0"), model.Input("shadow", "'sub'")).
		StartEvent("s_start").ServiceTask("svc", "op").
		TimerCatchEvent("pause", model.Duration("PT1M")).EndEvent("s_end").
		Sequence("s_start", "svc", "pause", "s_end")
	b.EndEvent("end").Sequence("start", "sub", "end")
	env := newEnv(build(t, b), x)
	s := start(t, env, map[string]any{"x": 1, "shadow": "root"})
	assertStatus(t, s, Active)

	if want := map[string]any{"x": int64(1), "shadow": "sub", "local": int64(0)}; !reflect.DeepEqual(input, want) {
		t.Errorf("op input = %v, want the visible variables %v", input, want)
	}
	if want := map[string]any{"local": int64(2), "shadow": "inner"}; !reflect.DeepEqual(subScope(t, s).Vars, want) {
		t.Errorf("sub scope = %v, want %v", subScope(t, s).Vars, want)
	}
	if want := map[string]any{"x": int64(3), "shadow": "root", "fresh": int64(4)}; !reflect.DeepEqual(s.Variables(), want) {
		t.Errorf("root scope = %v, want %v", s.Variables(), want)
	}
	fire(t, s, env, "pause")
	assertStatus(t, s, Completed)
	if want := map[string]any{"x": int64(3), "shadow": "root", "fresh": int64(4)}; !reflect.DeepEqual(s.Variables(), want) {
		t.Errorf("root scope after = %v, want %v", s.Variables(), want)
	}
}

// errorSub: start → sub → after → end, with an error boundary "caught" on
// sub catching code and a timer boundary "limit"; inside, a fork runs a
// long timer and a short timer followed by an error end throwing "E1".
func errorSub(t *testing.T, code string, direct bool) *model.Builder {
	b := model.NewBuilder("err").StartEvent("start")
	sub := b.SubProcess("sub").
		StartEvent("s_start").ParallelGateway("fork").
		TimerCatchEvent("long", model.Duration("PT1H")).EndEvent("s_end").
		ErrorEndEvent("throw", "E1").
		Sequence("s_start", "fork", "long", "s_end")
	if direct {
		sub.Flow("fork", "throw")
	} else {
		sub.TimerCatchEvent("short", model.Duration("PT1M")).Sequence("fork", "short", "throw")
	}
	b.TimerBoundary("limit", "sub", model.Duration("P1D"), true).EndEvent("timedOut").Flow("limit", "timedOut")
	b.ScriptTask("after", "'normal'", "path").EndEvent("end").
		Sequence("start", "sub", "after", "end")
	if code != "-" {
		b.ErrorBoundary("caught", "sub", code).ScriptTask("handle", "'handled'", "path").EndEvent("errEnd").
			Sequence("caught", "handle", "errEnd")
	}
	return b
}

func TestErrorEndCaughtBySubProcessBoundary(t *testing.T) {
	for _, code := range []string{"E1", ""} {
		t.Run("code="+code, func(t *testing.T) {
			s, env := run(t, errorSub(t, code, false), nil)
			assertStatus(t, s, Active)
			long, limit := waitAt(t, s, "long").ID, waitAt(t, s, "limit").ID
			flush(s)

			fire(t, s, env, "short")
			assertStatus(t, s, Completed)
			assertVars(t, s.Variables(), map[string]any{"path": "handled"})
			want := []string{limit, long}
			slices.Sort(want)
			if got := effectWaits(s, CancelTimer); !slices.Equal(got, want) {
				t.Errorf("cancelled timers = %v, want %v (outbox %+v)", got, want, s.Outbox)
			}
			if len(s.Waits) != 0 || len(s.Scopes) != 1 || len(s.Tracks) != 0 {
				t.Errorf("leftovers: waits %s scopes %d tracks %v", dumpWaits(s), len(s.Scopes), s.ActiveNodes())
			}
		})
	}
}

// TestErrorEndSameStepUnschedules: timers armed and cancelled in the same
// step never reach the outbox.
func TestErrorEndSameStepUnschedules(t *testing.T) {
	s, _ := run(t, errorSub(t, "E1", true), nil)
	assertStatus(t, s, Completed)
	assertVars(t, s.Variables(), map[string]any{"path": "handled"})
	if n := len(effects(s, ScheduleTimer)) + len(effects(s, CancelTimer)); n != 0 {
		t.Errorf("timer effects left in the outbox: %+v", s.Outbox)
	}
	if got := factKinds(s); !slices.Equal(got, []FactKind{FactStarted, FactCompleted}) {
		t.Errorf("facts = %v", got)
	}
}

func TestErrorEndUncaught(t *testing.T) {
	for _, tt := range []struct{ name, code string }{{"no boundary", "-"}, {"other code", "E2"}} {
		t.Run(tt.name, func(t *testing.T) {
			s, env := run(t, errorSub(t, tt.code, false), nil)
			flush(s)
			fire(t, s, env, "short")
			assertFailed(t, s, "throw", `uncaught BPMN error "E1"`)
			if s.Failure.Code != "E1" {
				t.Errorf("Failure.Code = %q", s.Failure.Code)
			}
			if len(effects(s, CancelTimer)) != 2 {
				t.Errorf("cancel effects = %+v, want the long timer and the boundary", effects(s, CancelTimer))
			}
		})
	}
}

// TestErrorEndCaughtTwoLevelsUp: an error thrown in a nested sub-process
// is caught on the outer one; both scopes are cancelled.
func TestErrorEndCaughtTwoLevelsUp(t *testing.T) {
	b := model.NewBuilder("nested").StartEvent("start")
	outer := b.SubProcess("outer").StartEvent("o_start").ParallelGateway("o_fork").
		TimerCatchEvent("o_wait", model.Duration("PT1H")).EndEvent("o_end").
		Sequence("o_start", "o_fork", "o_wait", "o_end").
		Sequence("o_fork", "inner")
	outer.SubProcess("inner").StartEvent("i_start").TimerCatchEvent("i_wait", model.Duration("PT1M")).ErrorEndEvent("i_throw", "DEEP").
		Sequence("i_start", "i_wait", "i_throw")
	outer.EndEvent("o_end2").Flow("inner", "o_end2")
	b.ErrorBoundary("caught", "outer", "DEEP").ScriptTask("handle", "'deep'", "path").EndEvent("end2").
		Sequence("caught", "handle", "end2")
	b.EndEvent("end").Sequence("start", "outer", "end")
	s, env := run(t, b, nil)
	assertStatus(t, s, Active)
	if len(s.Scopes) != 3 {
		t.Fatalf("scopes = %d, want root, outer and inner", len(s.Scopes))
	}
	oWait := waitAt(t, s, "o_wait").ID
	flush(s)
	fire(t, s, env, "i_wait")
	assertStatus(t, s, Completed)
	assertVars(t, s.Variables(), map[string]any{"path": "deep"})
	if got := effectWaits(s, CancelTimer); !slices.Equal(got, []string{oWait}) {
		t.Errorf("cancelled = %v, want [%s]", got, oWait)
	}
	if len(s.Scopes) != 1 {
		t.Errorf("scopes left: %d", len(s.Scopes))
	}
}

func TestTerminateEndInSubProcess(t *testing.T) {
	b := model.NewBuilder("term").StartEvent("start").ParallelGateway("fork")
	b.SubProcess("sub").
		StartEvent("s_start").ParallelGateway("s_fork").
		TimerCatchEvent("innerLong", model.Duration("PT2H")).EndEvent("s_end").
		TimerCatchEvent("innerShort", model.Duration("PT1M")).TerminateEndEvent("s_term").
		Sequence("s_start", "s_fork", "innerLong", "s_end").
		Sequence("s_fork", "innerShort", "s_term")
	b.TimerCatchEvent("outer", model.Duration("PT1H")).
		ScriptTask("afterSub", "'yes'", "subDone").
		EndEvent("end1").EndEvent("end2").
		Sequence("start", "fork", "sub", "afterSub", "end1").
		Sequence("fork", "outer", "end2")
	s, env := run(t, b, nil)
	innerLong := waitAt(t, s, "innerLong").ID
	flush(s)

	fire(t, s, env, "innerShort")
	assertStatus(t, s, Active) // only the sub-process ended
	assertVars(t, s.Variables(), map[string]any{"subDone": "yes"})
	if got := s.ActiveNodes(); !slices.Equal(got, []string{"outer"}) {
		t.Errorf("ActiveNodes = %v, want [outer]", got)
	}
	if got := effectWaits(s, CancelTimer); !slices.Equal(got, []string{innerLong}) {
		t.Errorf("cancelled = %v, want [%s]", got, innerLong)
	}
	if len(s.Scopes) != 1 {
		t.Errorf("scopes = %d", len(s.Scopes))
	}
	fire(t, s, env, "outer")
	assertStatus(t, s, Completed)
}

func TestTerminateEndAtRoot(t *testing.T) {
	b := model.NewBuilder("term").StartEvent("start").ParallelGateway("fork")
	b.SubProcess("sub").StartEvent("s_start").TimerCatchEvent("inner", model.Duration("PT2H")).EndEvent("s_end").
		Sequence("s_start", "inner", "s_end")
	b.TimerBoundary("limit", "sub", model.Duration("PT3H"), true).EndEvent("late").Flow("limit", "late")
	b.TimerCatchEvent("slow", model.Duration("PT1H")).TimerCatchEvent("quick", model.Duration("PT1M")).
		TerminateEndEvent("kill").EndEvent("end1").EndEvent("end2").
		Sequence("start", "fork", "sub", "end1").
		Sequence("fork", "slow", "end2").
		Sequence("fork", "quick", "kill")
	s, env := run(t, b, nil)
	want := []string{waitAt(t, s, "inner").ID, waitAt(t, s, "limit").ID, waitAt(t, s, "slow").ID}
	slices.Sort(want)
	flush(s)

	fire(t, s, env, "quick")
	assertStatus(t, s, Completed)
	if len(s.Tracks) != 0 || len(s.Waits) != 0 || len(s.Scopes) != 1 {
		t.Errorf("leftovers: %v %s %d", s.ActiveNodes(), dumpWaits(s), len(s.Scopes))
	}
	if got := effectWaits(s, CancelTimer); !slices.Equal(got, want) {
		t.Errorf("cancelled = %v, want %v", got, want)
	}
	if got := factKinds(s); !slices.Equal(got, []FactKind{FactCompleted}) {
		t.Errorf("facts = %v", got)
	}
}
