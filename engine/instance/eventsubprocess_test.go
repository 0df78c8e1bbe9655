package instance

import (
	"slices"
	"testing"

	"github.com/jetbpm/jetbpm/engine/model"
	"github.com/jetbpm/jetbpm/jobs"
)

// espWork is a process whose main path waits on job "work"; callers add
// event sub-processes to it.
func espWork() *model.Builder {
	return model.NewBuilder("esp").StartEvent("start").ServiceTask("work", "", model.WithWorker("w")).EndEvent("end").
		Sequence("start", "work", "end")
}

func errorEvent(w *Wait, code string) Event {
	return Event{ID: "err:" + w.ID, Kind: JobOutcome, Wait: w.ID, Outcome: &jobs.Terminal{Kind: jobs.Errored, ErrorCode: code, Message: "boom"}}
}

// An interrupting timer event sub-process cancels every token of its
// scope — the main path's job and a running non-interrupting event
// sub-process — closes the scope's other subscriptions, and runs once.
func TestInterruptingTimerEventSub(t *testing.T) {
	b := espWork()
	b.EventSubProcess("pingEsp", false).MessageStartEvent("ping", "ping", model.CorrelationKey("order")).
		ServiceTask("note", "", model.WithWorker("n")).EndEvent("pingEnd").Sequence("ping", "note", "pingEnd")
	b.EventSubProcess("timeoutEsp", true).TimerStartEvent("timeout", model.Duration("PT1H")).
		ScriptTask("mark", "true", "timedOut").EndEvent("timeoutEnd").Sequence("timeout", "mark", "timeoutEnd")
	s, env := run(t, b, map[string]any{"order": "o-1"})
	ping, timer := msgWait(t, s, "ping"), waitAt(t, s, "timeout")
	if ping.Scope != RootScope || ping.Track != "" || !ping.Sub.Repeat || timer.Kind != EventSubTimer || !timer.Due.Equal(t0.Add(60*60e9)) {
		t.Fatalf("ping %+v, timer %+v", ping, timer)
	}
	flush(s)
	apply(t, s, env, correlation(&ping, 1, nil))
	note := waitAt(t, s, "note")
	if !slices.Equal(s.ActiveNodes(), []string{"work", "pingEsp", "note"}) {
		t.Fatalf("active %v", s.ActiveNodes())
	}
	work := waitAt(t, s, "work")
	flush(s)
	fire(t, s, env, "timeout")
	assertStatus(t, s, Completed)
	assertVars(t, s.Variables(), map[string]any{"order": "o-1", "timedOut": true})
	if got := effectWaits(s, CancelJob); !slices.Equal(got, []string{work.ID, note.ID}) && !slices.Equal(got, []string{note.ID, work.ID}) {
		t.Errorf("CancelJob %v, want work and note", got)
	}
	if got := subs(s, Unsubscribe); !slices.Equal(got, []string{ping.ID}) {
		t.Errorf("Unsubscribe %v, want ping's", got)
	}
	if len(effects(s, ScheduleTimer)) != 0 || len(s.Waits) != 0 {
		t.Errorf("timer re-armed or waits left: %s", dumpWaits(s))
	}
}

// A non-interrupting timer event sub-process on a cycle fires each
// time beside the scope; the scope ends only when it and they are done.
func TestNonInterruptingCycleEventSub(t *testing.T) {
	b := espWork()
	b.EventSubProcess("tick", false).TimerStartEvent("every", model.Cycle("R3/PT10M")).
		ScriptTask("count", "(ticks ?? 0) + 1", "ticks").EndEvent("tickEnd").Sequence("every", "count", "tickEnd")
	s, env := run(t, b, nil)
	first := waitAt(t, s, "every")
	for i := range 3 {
		w := fire(t, s, env, "every")
		if w.ID != first.ID || w.Firing != i {
			t.Fatalf("firing %d: wait %+v", i, w)
		}
	}
	assertVars(t, s.Variables(), map[string]any{"ticks": int64(3)})
	if slices.ContainsFunc(s.Waits, func(w *Wait) bool { return w.Node == "every" }) {
		t.Fatalf("a 4th firing is armed: %s", dumpWaits(s))
	}
	assertStatus(t, s, Active)
	apply(t, s, env, jobDoneEvent(waitAt(t, s, "work"), nil))
	assertStatus(t, s, Completed)
}

// Message event sub-processes: a non-interrupting one runs beside the
// scope as often as the message comes and the scope waits for it; an
// interrupting one ends the scope's tokens.
func TestMessageEventSubs(t *testing.T) {
	t.Run("non-interrupting", func(t *testing.T) {
		b := espWork()
		b.EventSubProcess("more", false).MessageStartEvent("add", "add", model.CorrelationKey("order"), model.Output("item", "item")).
			ServiceTask("pack", "", model.WithWorker("p")).EndEvent("addEnd").Sequence("add", "pack", "addEnd")
		s, env := run(t, b, map[string]any{"order": "o-1"})
		add := msgWait(t, s, "add")
		if !add.Sub.Repeat || !slices.Equal(subs(s, Subscribe), []string{add.ID}) {
			t.Fatalf("add %+v, Subscribe %v", add.Sub, subs(s, Subscribe))
		}
		apply(t, s, env, correlation(&add, 1, map[string]any{"item": "a"}))
		apply(t, s, env, correlation(&add, 2, map[string]any{"item": "b"}))
		if n := len(s.tracksAt("pack")); n != 2 {
			t.Fatalf("%d tracks at pack, want 2", n)
		}
		assertVars(t, s.Variables(), map[string]any{"order": "o-1", "item": "b"})
		apply(t, s, env, jobDoneEvent(waitAt(t, s, "work"), nil))
		assertStatus(t, s, Active) // its event sub-processes still run
		for _, w := range slices.Clone(s.Waits) {
			if w.Node == "pack" {
				apply(t, s, env, jobDoneEvent(w, nil))
			}
		}
		assertStatus(t, s, Completed)
		if got := subs(s, Unsubscribe); !slices.Equal(got, []string{add.ID}) {
			t.Errorf("Unsubscribe %v, want the add subscription closed with the instance", got)
		}
	})
	t.Run("interrupting", func(t *testing.T) {
		b := espWork()
		b.EventSubProcess("stop", true).MessageStartEvent("cancel", "cancel", model.CorrelationKey("order")).
			EndEvent("stopped").Sequence("cancel", "stopped")
		s, env := run(t, b, map[string]any{"order": "o-1"})
		cancel, work := msgWait(t, s, "cancel"), waitAt(t, s, "work")
		if cancel.Sub.Repeat {
			t.Fatal("an interrupting event sub-process's subscription repeats")
		}
		flush(s)
		apply(t, s, env, correlation(&cancel, 1, nil))
		assertStatus(t, s, Completed)
		if !slices.Equal(effectWaits(s, CancelJob), []string{work.ID}) || len(effects(s, Unsubscribe)) != 0 {
			t.Errorf("CancelJob %v, Unsubscribe %v", effectWaits(s, CancelJob), subs(s, Unsubscribe))
		}
	})
}

func (s *State) tracksAt(node string) []*Track {
	var out []*Track
	for _, t := range s.Tracks {
		if t.Node == node {
			out = append(out, t)
		}
	}
	return out
}

// An error event sub-process catches an error end event and a job's
// BPMN error of its scope; a code it does not catch raises the incident.
func TestErrorEventSub(t *testing.T) {
	handler := func(b *model.Builder, code string) {
		b.EventSubProcess("onError", true).ErrorStartEvent("caught", code).
			ScriptTask("handle", "true", "handled").EndEvent("handledEnd").Sequence("caught", "handle", "handledEnd")
	}
	t.Run("error end event", func(t *testing.T) {
		b := model.NewBuilder("esp").StartEvent("start").ErrorEndEvent("fail", "E1").Flow("start", "fail")
		handler(b, "E1")
		s, _ := run(t, b, nil)
		assertStatus(t, s, Completed)
		assertVars(t, s.Variables(), map[string]any{"handled": true})
	})
	t.Run("job error, catch-all", func(t *testing.T) {
		b := espWork()
		handler(b, "")
		s, env := run(t, b, nil)
		apply(t, s, env, errorEvent(waitAt(t, s, "work"), "E2"))
		assertStatus(t, s, Completed)
		if len(s.Incidents) != 0 {
			t.Errorf("incidents %v", s.Incidents)
		}
	})
	t.Run("uncaught code", func(t *testing.T) {
		b := espWork()
		handler(b, "E1")
		s, env := run(t, b, nil)
		apply(t, s, env, errorEvent(waitAt(t, s, "work"), "E2"))
		assertStatus(t, s, Active)
		assertIncident(t, s, "work", `uncaught BPMN error "E2"`)
		assertNoVar(t, s.Variables(), "handled")
	})
}

// The nearest catcher wins: the activity's own boundary, then the event
// sub-process of the scope the error is thrown in, then a boundary of the
// sub-process around it.
func TestErrorEventSubPrecedence(t *testing.T) {
	build := func(ownBoundary bool) *model.Builder {
		b := model.NewBuilder("prec").StartEvent("start")
		sub := b.SubProcess("sub")
		sub.StartEvent("subStart").ServiceTask("inner", "", model.WithWorker("w")).EndEvent("subEnd").Sequence("subStart", "inner", "subEnd")
		if ownBoundary {
			sub.ErrorBoundary("own", "inner", "E").ScriptTask("byOwn", "true", "own").EndEvent("ownEnd").Sequence("own", "byOwn", "ownEnd")
		}
		sub.EventSubProcess("subEsp", true).ErrorStartEvent("espStart", "E").
			ScriptTask("byEsp", "true", "esp").EndEvent("espEnd").Sequence("espStart", "byEsp", "espEnd")
		b.ErrorBoundary("outer", "sub", "E").ScriptTask("byOuter", "true", "outer").EndEvent("outerEnd").Sequence("outer", "byOuter", "outerEnd")
		b.ScriptTask("after", "true", "after").EndEvent("end").Sequence("start", "sub", "after", "end")
		return b
	}
	for _, tc := range []struct {
		own  bool
		want string
	}{{false, "esp"}, {true, "own"}} {
		s, env := run(t, build(tc.own), nil)
		apply(t, s, env, errorEvent(waitAt(t, s, "inner"), "E"))
		assertStatus(t, s, Completed)
		assertVars(t, s.Variables(), map[string]any{tc.want: true, "after": true})
	}
}

// An interrupting event sub-process while a parallel join waits: the
// joined token is cancelled with the rest, and the instance completes
// through the event sub-process (no stuck join).
func TestInterruptingEventSubWhileJoinWaits(t *testing.T) {
	b := model.NewBuilder("join").StartEvent("start").ParallelGateway("fork").
		ScriptTask("quick", "1", "q").ServiceTask("slow", "", model.WithWorker("w")).
		ParallelGateway("join").EndEvent("end").
		Sequence("start", "fork", "quick", "join", "end").Sequence("fork", "slow", "join")
	b.EventSubProcess("abort", true).MessageStartEvent("stop", "stop", model.CorrelationKey("id")).
		EndEvent("aborted").Sequence("stop", "aborted")
	s, env := run(t, b, map[string]any{"id": "x"})
	if !sameNodes(s.ActiveNodes(), []string{"slow", "join"}) {
		t.Fatalf("active %v, want slow and a token joining", s.ActiveNodes())
	}
	stop := msgWait(t, s, "stop")
	apply(t, s, env, correlation(&stop, 1, nil))
	assertStatus(t, s, Completed)
	if len(s.Tracks) != 0 || len(s.Stuck) != 0 || len(s.Waits) != 0 {
		t.Errorf("tracks %v, stuck %v, waits %s", s.ActiveNodes(), s.Stuck, dumpWaits(s))
	}
}

// An event sub-process inside an embedded sub-process belongs to each of
// its activations: armed when it starts, run as a child of its scope,
// interrupting only it; the process goes on after the sub-process.
func TestEventSubInSubProcess(t *testing.T) {
	b := model.NewBuilder("nested").StartEvent("start")
	sub := b.SubProcess("sub")
	sub.StartEvent("subStart").ServiceTask("inner", "", model.WithWorker("w")).EndEvent("subEnd").Sequence("subStart", "inner", "subEnd")
	sub.EventSubProcess("late", true).TimerStartEvent("deadline", model.Duration("PT5M")).
		ScriptTask("mark", "true", "late").EndEvent("lateEnd").Sequence("deadline", "mark", "lateEnd")
	b.ServiceTask("after", "", model.WithWorker("a")).EndEvent("end").Sequence("start", "sub", "after", "end")
	s, env := run(t, b, nil)
	sc := subScope(t, s)
	if w := waitAt(t, s, "deadline"); w.Scope != sc.ID {
		t.Fatalf("deadline wait scope %q, want %q", w.Scope, sc.ID)
	}
	fire(t, s, env, "deadline")
	if !slices.Equal(s.ActiveNodes(), []string{"after"}) {
		t.Fatalf("active %v, want after", s.ActiveNodes())
	}
	assertVars(t, s.Variables(), map[string]any{"late": true})
}

// The scope's event sub-process waits close when the scope ends, in the
// same step: an older timer is cancelled and an older subscription
// closed; ones opened in this very step never leave the outbox.
func TestEventSubWaitsCloseWithTheScope(t *testing.T) {
	withSubs := func(b *model.Builder) {
		b.EventSubProcess("t", false).TimerStartEvent("tick", model.Cycle("R/PT1M")).EndEvent("tEnd").Sequence("tick", "tEnd")
		b.EventSubProcess("m", false).MessageStartEvent("msg", "msg", model.CorrelationKey("k")).EndEvent("mEnd").Sequence("msg", "mEnd")
	}
	t.Run("older", func(t *testing.T) {
		b := model.NewBuilder("close").StartEvent("start")
		sub := b.SubProcess("sub")
		sub.StartEvent("subStart").ServiceTask("inner", "", model.WithWorker("w")).EndEvent("subEnd").Sequence("subStart", "inner", "subEnd")
		withSubs(sub)
		b.ServiceTask("after", "", model.WithWorker("a")).EndEvent("end").Sequence("start", "sub", "after", "end")
		s, env := run(t, b, map[string]any{"k": "1"})
		tick, msg := waitAt(t, s, "tick"), msgWait(t, s, "msg")
		flush(s)
		apply(t, s, env, jobDoneEvent(waitAt(t, s, "inner"), nil))
		if !slices.Equal(effectWaits(s, CancelTimer), []string{tick.ID}) || !slices.Equal(subs(s, Unsubscribe), []string{msg.ID}) {
			t.Errorf("CancelTimer %v, Unsubscribe %v", effectWaits(s, CancelTimer), subs(s, Unsubscribe))
		}
		if slices.ContainsFunc(s.Waits, func(w *Wait) bool { return w.Scope != "" }) {
			t.Errorf("scope waits left: %s", dumpWaits(s))
		}
	})
	t.Run("same step", func(t *testing.T) {
		b := model.NewBuilder("close").StartEvent("start")
		sub := b.SubProcess("sub")
		sub.StartEvent("subStart").EndEvent("subEnd").Sequence("subStart", "subEnd")
		withSubs(sub)
		b.ServiceTask("after", "", model.WithWorker("a")).EndEvent("end").Sequence("start", "sub", "after", "end")
		s, _ := run(t, b, map[string]any{"k": "1"})
		for _, k := range []EffectKind{ScheduleTimer, CancelTimer, Subscribe, Unsubscribe} {
			if n := len(effects(s, k)); n != 0 {
				t.Errorf("%d %s effects, want none", n, k)
			}
		}
	})
}

// A message event sub-process whose correlation key cannot be evaluated
// faults its sub-process, or fails the instance at process level.
func TestEventSubKeyFault(t *testing.T) {
	b := model.NewBuilder("key").StartEvent("start")
	sub := b.SubProcess("sub")
	sub.StartEvent("subStart").EndEvent("subEnd").Sequence("subStart", "subEnd")
	sub.EventSubProcess("m", false).MessageStartEvent("msg", "msg", model.CorrelationKey("missing.x")).EndEvent("mEnd").Sequence("msg", "mEnd")
	b.EndEvent("end").Sequence("start", "sub", "end")
	s, _ := run(t, b, nil)
	assertIncident(t, s, "sub", `event sub-process "m"`)
	if len(s.Scopes) != 1 || len(effects(s, Subscribe)) != 0 {
		t.Errorf("scopes %d, Subscribe %v", len(s.Scopes), subs(s, Subscribe))
	}

	root := espWork()
	root.EventSubProcess("m", false).MessageStartEvent("msg", "msg", model.CorrelationKey("missing.x")).EndEvent("mEnd").Sequence("msg", "mEnd")
	s, _ = run(t, root, nil)
	assertFailed(t, s, "start", `event sub-process "m"`)
}

// An interrupting event sub-process fires once per scope activation: an
// error its handler throws again goes past the interrupted scope.
func TestInterruptedScopeCatchesNoMore(t *testing.T) {
	b := model.NewBuilder("again").StartEvent("start").ErrorEndEvent("fail", "E").Flow("start", "fail")
	b.EventSubProcess("onError", true).ErrorStartEvent("caught", "E").ErrorEndEvent("rethrow", "E").Flow("caught", "rethrow")
	s, _ := run(t, b, nil)
	assertFailed(t, s, "rethrow", `uncaught BPMN error "E"`)
}
