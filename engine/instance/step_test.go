package instance

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jetbpm/jetbpm/engine/model"
)

func TestStartTaskEndCompletes(t *testing.T) {
	b := model.NewBuilder("simple").
		StartEvent("start").Task("work").EndEvent("end").
		Sequence("start", "work", "end")
	env := newEnv(build(t, b), nil)
	s := start(t, env, map[string]any{"amount": 5})

	assertStatus(t, s, Completed)
	if s.ID != "i1" || s.ProcessID != "simple" || s.Version != 1 {
		t.Errorf("identity = %s %s v%d", s.ID, s.ProcessID, s.Version)
	}
	if !s.StartedAt.Equal(t0) || !s.EndedAt.Equal(t0) {
		t.Errorf("StartedAt %v EndedAt %v, want both %v", s.StartedAt, s.EndedAt, t0)
	}
	if n := s.ActiveNodes(); len(n) != 0 {
		t.Errorf("ActiveNodes = %v, want none", n)
	}
	if len(s.Tracks) != 0 || len(s.Waits) != 0 || s.Failure != nil {
		t.Errorf("leftovers: tracks %d waits %d failure %v", len(s.Tracks), len(s.Waits), s.Failure)
	}
	assertVars(t, s.Variables(), map[string]any{"amount": int64(5)})

	want := []Effect{
		{ID: "fact:i1.started", Kind: PublishFact, Fact: &Fact{ID: "i1.started", Kind: FactStarted, Instance: "i1", ProcessID: "simple", Version: 1, Time: t0}},
		{ID: "fact:i1.completed", Kind: PublishFact, Fact: &Fact{ID: "i1.completed", Kind: FactCompleted, Instance: "i1", ProcessID: "simple", Version: 1, Time: t0}},
	}
	if !reflect.DeepEqual(s.Outbox, want) {
		t.Errorf("outbox = %+v\nwant %+v", s.Outbox, want)
	}
}

func TestEndedAtIsCompletionTime(t *testing.T) {
	b := model.NewBuilder("p").
		StartEvent("start").TimerCatchEvent("wait", model.Duration("PT1H")).EndEvent("end").
		Sequence("start", "wait", "end")
	s, env := run(t, b, nil)
	assertStatus(t, s, Active)
	if !s.EndedAt.IsZero() {
		t.Errorf("EndedAt = %v while active", s.EndedAt)
	}
	if got := s.ActiveNodes(); !slices.Equal(got, []string{"wait"}) {
		t.Errorf("ActiveNodes = %v, want [wait]", got)
	}
	flush(s)
	fire(t, s, env, "wait")
	assertStatus(t, s, Completed)
	if !s.StartedAt.Equal(t0) || !s.EndedAt.Equal(t0.Add(time.Hour)) {
		t.Errorf("StartedAt %v EndedAt %v", s.StartedAt, s.EndedAt)
	}
	if got := factKinds(s); !slices.Equal(got, []FactKind{FactCompleted}) {
		t.Errorf("facts = %v, want [completed]", got)
	}
	if f := effects(s, PublishFact)[0].Fact; !f.Time.Equal(env.Now) {
		t.Errorf("completed fact time %v, want %v", f.Time, env.Now)
	}
}

func TestStartRejects(t *testing.T) {
	unvalidated := &model.Process{ID: "p"}
	if _, err := Start("i1", Env{Process: unvalidated, Now: t0}, nil); err == nil {
		t.Error("Start with an unvalidated process: no error")
	}
	if _, err := Start("i1", Env{Now: t0}, nil); err == nil {
		t.Error("Start without a process: no error")
	}
	p := build(t, model.NewBuilder("p").StartEvent("s").EndEvent("e").Flow("s", "e"))
	_, err := Start("i1", Env{Process: p, Now: t0}, map[string]any{"bad": make(chan int)})
	if err == nil || !strings.Contains(err.Error(), `"bad"`) {
		t.Errorf("Start with an unstorable variable: err = %v, want one naming it", err)
	}
}

func TestLoopWithoutWaitStateFails(t *testing.T) {
	b := model.NewBuilder("spin").
		StartEvent("start").Task("a").ExclusiveGateway("again").EndEvent("end").
		Sequence("start", "a", "again").
		Flow("again", "a", model.When("true")).
		DefaultFlow("again", "end")
	env := newEnv(build(t, b), nil)
	env.MaxNodes = 20
	s := start(t, env, nil)
	assertStatus(t, s, Failed)
	if !strings.Contains(s.Failure.Message, "more than 20 nodes executed without reaching a wait state") {
		t.Errorf("message = %q", s.Failure.Message)
	}
	if len(s.Tracks) != 0 {
		t.Errorf("tracks left: %v", s.ActiveNodes())
	}
	if got := factKinds(s); !slices.Equal(got, []FactKind{FactStarted, FactFailed}) {
		t.Errorf("facts = %v", got)
	}
}

// TestMaxNodesIsPerEvent: whether an instance fails must not depend on how
// the engine batches events into one Apply. Each event below runs a handful
// of nodes and reaches a wait state; applied one at a time they complete the
// instance, so applied together they must too.
func TestMaxNodesIsPerEvent(t *testing.T) {
	b := model.NewBuilder("batch").
		StartEvent("start").ParallelGateway("fork").
		TimerCatchEvent("ta", model.Duration("PT1M")).Task("a1").Task("a2").Task("a3").
		TimerCatchEvent("tb", model.Duration("PT1M")).Task("b1").Task("b2").Task("b3").
		ParallelGateway("join").EndEvent("end").
		Sequence("start", "fork", "ta", "a1", "a2", "a3", "join", "end").
		Sequence("fork", "tb", "b1", "b2", "b3", "join")
	p := build(t, b)

	startAt := func() (*State, *testEnv) {
		env := newEnv(p, nil)
		env.MaxNodes = 6
		return start(t, env, nil), env
	}

	one, env := startAt()
	ea, eb := timerEvent(waitAt(t, one, "ta")), timerEvent(waitAt(t, one, "tb"))
	env.Now = t0.Add(time.Minute)
	apply(t, one, env, ea)
	apply(t, one, env, eb)
	assertStatus(t, one, Completed)

	batch, env := startAt()
	env.Now = t0.Add(time.Minute)
	if n := apply(t, batch, env, ea, eb); n != 2 {
		t.Errorf("applied = %d, want 2", n)
	}
	// BUG: runner.nodes counts across all events of an Apply call.
	assertStatus(t, batch, Completed)
}

func TestCancelTerminates(t *testing.T) {
	b := model.NewBuilder("p").
		StartEvent("start").ParallelGateway("fork").
		TimerCatchEvent("t1", model.Duration("PT1H"))
	b.SubProcess("sub").StartEvent("s_start").TimerCatchEvent("t2", model.Duration("PT2H")).EndEvent("s_end").
		Sequence("s_start", "t2", "s_end")
	b.TimerBoundary("limit", "sub", model.Duration("PT3H"), true).
		EndEvent("end").EndEvent("late").
		Sequence("start", "fork", "t1", "end").
		Sequence("fork", "sub", "end").
		Flow("limit", "late")
	s, env := run(t, b, nil)
	assertStatus(t, s, Active)
	waits := []string{waitAt(t, s, "t1").ID, waitAt(t, s, "t2").ID, waitAt(t, s, "limit").ID}
	slices.Sort(waits)
	flush(s)

	env.Now = t0.Add(time.Minute)
	if n := apply(t, s, env, Event{ID: "c1", Kind: Cancel, Reason: "operator"}); n != 1 {
		t.Fatalf("applied = %d", n)
	}
	assertStatus(t, s, Terminated)
	if len(s.Tracks) != 0 || len(s.Waits) != 0 || len(s.Scopes) != 1 {
		t.Errorf("tracks %v waits %s scopes %d", s.ActiveNodes(), dumpWaits(s), len(s.Scopes))
	}
	if got := effectWaits(s, CancelTimer); !slices.Equal(got, waits) {
		t.Errorf("cancelled timers %v, want %v", got, waits)
	}
	facts := effects(s, PublishFact)
	if len(facts) != 1 || facts[0].Fact.Kind != FactTerminated || facts[0].Fact.Error != "operator" || !facts[0].Fact.Time.Equal(env.Now) {
		t.Errorf("facts = %+v", facts)
	}
	if !s.EndedAt.Equal(env.Now) {
		t.Errorf("EndedAt = %v", s.EndedAt)
	}

	// Finished instances ignore further events.
	before := snapshot(t, s)
	if n := apply(t, s, env, Event{Kind: Cancel}); n != 0 {
		t.Errorf("second cancel applied = %d", n)
	}
	if snapshot(t, s) != before {
		t.Error("second cancel changed the state")
	}
}

func TestApplyWithAnotherDefinition(t *testing.T) {
	b := func() *model.Builder {
		return model.NewBuilder("p").StartEvent("start").TimerCatchEvent("w", model.Duration("PT1M")).EndEvent("end").
			Sequence("start", "w", "end")
	}
	s, _ := run(t, b(), nil)
	v2 := build(t, b())
	v2.Version = 2
	other := build(t, model.NewBuilder("q").StartEvent("start").EndEvent("end").Flow("start", "end"))
	for name, p := range map[string]*model.Process{"other version": v2, "other process": other, "none": nil} {
		before := snapshot(t, s)
		n, err := Apply(s, Env{Process: p, Now: t0}, timerEvent(s.Waits[0]))
		if !errors.Is(err, ErrInvariant) || n != 0 {
			t.Errorf("%s: Apply = %d, %v; want ErrInvariant", name, n, err)
		}
		if snapshot(t, s) != before {
			t.Errorf("%s: state changed", name)
		}
	}
}

// TestDeterminism runs the same inputs twice and compares everything.
func TestDeterminism(t *testing.T) {
	b := model.NewBuilder("det").
		StartEvent("start").ServiceTask("svc", "calc").ParallelGateway("fork").
		TimerCatchEvent("ta", model.Duration("PT5M")).ScriptTask("sa", "n * 2", "double")
	b.SubProcess("sub", model.Input("local", "n + 1"), model.Output("fromSub", "local")).StartEvent("s_start").ServiceTask("inner", "calc").TimerCatchEvent("tw", model.Duration("PT10M")).EndEvent("s_end").
		Sequence("s_start", "inner", "tw", "s_end")
	b.TimerBoundary("remind", "sub", model.Cycle("R3/PT3M"), false).Task("reminded").
		ParallelGateway("join").EndEvent("end").EndEvent("rend").
		Sequence("start", "svc", "fork", "ta", "sa", "join", "end").
		Sequence("fork", "sub", "join").
		Sequence("remind", "reminded", "rend")
	p := build(t, b)

	exec := func() *fakeExec {
		return newExec(map[string]opFunc{"calc": func(_ context.Context, c Call) (map[string]any, error) {
			return map[string]any{"n": int64(len(c.Input)) + 1, "last": c.Node, "at": c.Activation}, nil
		}})
	}
	runOnce := func() (*State, []Call) {
		x := exec()
		env := newEnv(p, x)
		s := start(t, env, map[string]any{"n": 1, "tags": []any{"a", map[string]any{"k": 1.5}}})
		for range 10 {
			var next *Wait
			for _, w := range s.Waits {
				if next == nil || w.Due.Before(next.Due) || w.Due.Equal(next.Due) && w.ID < next.ID {
					next = w
				}
			}
			if next == nil {
				break
			}
			env.Now = next.Due
			apply(t, s, env, timerEvent(next), Event{Kind: TimerFired, Wait: "nope"})
		}
		return s, x.calls
	}
	s1, c1 := runOnce()
	s2, c2 := runOnce()
	assertStatus(t, s1, Completed)
	assertVars(t, s1.Variables(), map[string]any{"fromSub": int64(4), "double": int64(12), "n": int64(6)})
	if !reflect.DeepEqual(s1, s2) {
		t.Errorf("states differ:\n%s\n%s", snapshot(t, s1), snapshot(t, s2))
	}
	if !reflect.DeepEqual(s1.Outbox, s2.Outbox) {
		t.Error("outboxes differ")
	}
	if !reflect.DeepEqual(c1, c2) {
		t.Errorf("calls differ: %+v / %+v", c1, c2)
	}
	if len(s1.Outbox) < 5 {
		t.Errorf("suspiciously small outbox: %+v", s1.Outbox)
	}
}
