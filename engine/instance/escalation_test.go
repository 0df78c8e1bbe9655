package instance

import (
	"slices"
	"testing"

	"github.com/jetbpm/jetbpm/engine/model"
)

// escalating is a process whose sub-process "sub" throws escalation code
// from an intermediate throw event, then waits on job "inner"; catch adds
// the catchers.
func escalating(code string, catch func(b, sub *model.Builder)) *model.Builder {
	b := model.NewBuilder("esc").StartEvent("start")
	sub := b.SubProcess("sub")
	sub.StartEvent("subStart").EscalationThrowEvent("raise", code).ServiceTask("inner", "", model.WithWorker("w")).EndEvent("subEnd").
		Sequence("subStart", "raise", "inner", "subEnd")
	b.EndEvent("end").Sequence("start", "sub", "end")
	catch(b, sub)
	return b
}

func TestEscalationBoundary(t *testing.T) {
	boundary := func(interrupting bool) func(b, sub *model.Builder) {
		return func(b, _ *model.Builder) {
			b.EscalationBoundary("caught", "sub", "X", interrupting).ScriptTask("note", "true", "escalated").EndEvent("caughtEnd").
				Sequence("caught", "note", "caughtEnd")
		}
	}
	t.Run("interrupting", func(t *testing.T) {
		s, _ := run(t, escalating("X", boundary(true)), nil)
		assertStatus(t, s, Completed)
		assertVars(t, s.Variables(), map[string]any{"escalated": true})
		if len(effects(s, EnqueueJob)) != 0 {
			t.Error("the thrower went on to its job")
		}
	})
	t.Run("non-interrupting", func(t *testing.T) {
		s, env := run(t, escalating("X", boundary(false)), nil)
		assertVars(t, s.Variables(), map[string]any{"escalated": true})
		if !slices.Equal(s.ActiveNodes(), []string{"sub", "inner"}) {
			t.Fatalf("active %v, want the thrower gone on to inner", s.ActiveNodes())
		}
		apply(t, s, env, jobDoneEvent(waitAt(t, s, "inner"), nil))
		assertStatus(t, s, Completed)
	})
}

// An escalation event sub-process in an enclosing scope catches what no
// nearer catcher does; exact code wins over catch-all.
func TestEscalationEventSubAndCodes(t *testing.T) {
	catchers := func(b, _ *model.Builder) {
		b.EventSubProcess("onX", false).EscalationStartEvent("x", "X").ScriptTask("gotX", "true", "x").EndEvent("xEnd").Sequence("x", "gotX", "xEnd")
		b.EventSubProcess("onAny", false).EscalationStartEvent("any", "").ScriptTask("gotAny", "true", "any").EndEvent("anyEnd").Sequence("any", "gotAny", "anyEnd")
	}
	for code, want := range map[string]string{"X": "x", "Y": "any"} {
		s, env := run(t, escalating(code, catchers), nil)
		assertVars(t, s.Variables(), map[string]any{want: true})
		apply(t, s, env, jobDoneEvent(waitAt(t, s, "inner"), nil))
		assertStatus(t, s, Completed)
	}
	// Boundaries: the same rule.
	bounds := func(b, _ *model.Builder) {
		b.EscalationBoundary("bx", "sub", "X", true).ScriptTask("gotX", "true", "x").EndEvent("xEnd").Sequence("bx", "gotX", "xEnd")
		b.EscalationBoundary("bany", "sub", "", true).ScriptTask("gotAny", "true", "any").EndEvent("anyEnd").Sequence("bany", "gotAny", "anyEnd")
	}
	for code, want := range map[string]string{"X": "x", "Y": "any"} {
		s, _ := run(t, escalating(code, bounds), nil)
		assertStatus(t, s, Completed)
		assertVars(t, s.Variables(), map[string]any{want: true})
	}
	// An interrupting escalation event sub-process ends the scope's tokens.
	s, _ := run(t, escalating("X", func(b, _ *model.Builder) {
		b.EventSubProcess("stop", true).EscalationStartEvent("x", "X").EndEvent("xEnd").Sequence("x", "xEnd")
	}), nil)
	assertStatus(t, s, Completed)
	if len(effects(s, EnqueueJob)) != 0 {
		t.Error("the thrower went on to its job")
	}
}

// Uncaught, an escalation changes nothing: the thrower goes on, an end
// event ends its token, no incident.
func TestEscalationUncaught(t *testing.T) {
	s, env := run(t, escalating("X", func(_, _ *model.Builder) {}), nil)
	if len(s.Incidents) != 0 || !slices.Equal(s.ActiveNodes(), []string{"sub", "inner"}) {
		t.Fatalf("incidents %v, active %v", s.Incidents, s.ActiveNodes())
	}
	apply(t, s, env, jobDoneEvent(waitAt(t, s, "inner"), nil))
	assertStatus(t, s, Completed)

	b := model.NewBuilder("end").StartEvent("start").EscalationEndEvent("up", "X").Flow("start", "up")
	s, _ = run(t, b, nil)
	assertStatus(t, s, Completed)
}

// An escalation that reaches a called instance's root is reported to its
// caller while the child goes on; the caller's call activity boundary
// catches it, once per report.
func TestEscalationFromCalledInstance(t *testing.T) {
	child := build(t, model.NewBuilder("child").StartEvent("cs").EscalationThrowEvent("up", "LATE").
		ServiceTask("cw", "", model.WithWorker("cw")).EndEvent("ce").Sequence("cs", "up", "cw", "ce"))
	parentRef := ParentRef{Instance: "p1", Wait: "p1/call/3"}
	c, err := StartChild("p1_c3", Env{Process: child, Now: t0}, nil, parentRef)
	if err != nil {
		t.Fatal(err)
	}
	var report *Effect
	for i := range c.Outbox {
		if e := &c.Outbox[i]; e.Kind == NotifyParent {
			report = e
		}
	}
	if report == nil || report.Result.Escalation == nil || report.Result.Escalation.Code != "LATE" || report.Result.Status != Active || *report.Parent != parentRef {
		t.Fatalf("report %+v", report)
	}
	if !slices.Equal(c.ActiveNodes(), []string{"cw"}) {
		t.Fatalf("child active %v, want it gone on", c.ActiveNodes())
	}

	for _, interrupting := range []bool{false, true} {
		b := model.NewBuilder("parent").StartEvent("start").CallActivity("call", "child").EndEvent("end").Sequence("start", "call", "end").
			EscalationBoundary("late", "call", "LATE", interrupting).ScriptTask("note", "true", "late").EndEvent("lateEnd").Sequence("late", "note", "lateEnd")
		p := build(t, b)
		env := newEnv(p, nil)
		s, err := Start("p1", env.Env, nil)
		if err != nil {
			t.Fatal(err)
		}
		w := waitAt(t, s, "call")
		res := *report.Result
		res.Child = w.Child
		ev := Event{ID: "child:" + w.Child + ":done", Kind: ChildDone, Wait: w.ID, Child: &res}
		flush(s)
		if n := apply(t, s, env, ev, ev); n != 1 {
			t.Fatalf("interrupting=%v: applied %d of a report and its redelivery, want 1", interrupting, n)
		}
		assertVars(t, s.Variables(), map[string]any{"late": true})
		if interrupting {
			assertStatus(t, s, Completed)
			if cc := effects(s, CancelChild); len(cc) != 1 || cc[0].Child != w.Child {
				t.Errorf("CancelChild %+v, want the child %s cancelled", cc, w.Child)
			}
			continue
		}
		if waitAt(t, s, "call").ID != w.ID {
			t.Error("the call activity's wait changed")
		}
		apply(t, s, env, Event{ID: "done", Kind: ChildDone, Wait: w.ID, Child: &ChildResult{Child: w.Child, Status: Completed}})
		assertStatus(t, s, Completed)
	}
}
