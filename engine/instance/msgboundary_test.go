package instance

import (
	"fmt"
	"slices"
	"testing"

	"github.com/jetbpm/jetbpm/engine/model"
	"github.com/jetbpm/jetbpm/incidents"
	"github.com/jetbpm/jetbpm/jobs"
)

// boundaries is an external task "work" with an interrupting message
// boundary "cancel" and a non-interrupting one "ping", each to an end.
func boundaries(key string) *model.Builder {
	return model.NewBuilder("bnd").StartEvent("start").ServiceTask("work", "", model.WithWorker("w")).EndEvent("end").
		MessageBoundary("cancel", "work", "cancel", key, true, model.Output("why", "reason")).EndEvent("cancelled").
		MessageBoundary("ping", "work", "ping", key, false, model.Output("last", "n")).ScriptTask("count", "(pings ?? 0) + 1", "pings").EndEvent("pinged").
		Sequence("start", "work", "end").Sequence("cancel", "cancelled").Sequence("ping", "count", "pinged")
}

func jobDoneEvent(w *Wait, out map[string]any) Event {
	return Event{ID: "done:" + w.ID, Kind: JobOutcome, Wait: w.ID, Outcome: &jobs.Terminal{Kind: jobs.Done, Output: out}}
}

func TestMessageBoundaries(t *testing.T) {
	s, env := run(t, boundaries("order"), map[string]any{"order": "o-1"})
	cancel, ping := msgWait(t, s, "cancel"), msgWait(t, s, "ping")
	work := waitAt(t, s, "work")
	if cancel.Track != work.Track || cancel.Sub.Repeat || !ping.Sub.Repeat || cancel.Sub.Key != "o-1" {
		t.Fatalf("cancel %+v %+v, ping %+v", cancel, cancel.Sub, ping.Sub)
	}
	if !slices.Equal(subs(s, Subscribe), []string{cancel.ID, ping.ID}) {
		t.Fatalf("Subscribe %v", subs(s, Subscribe))
	}
	for _, e := range effects(s, Subscribe) {
		if e.Sub.Repeat != (e.Wait == ping.ID) {
			t.Errorf("Subscribe %+v: Repeat wrong", e.Sub)
		}
	}
	flush(s)

	// The non-interrupting boundary fires each time; its wait stays.
	apply(t, s, env, correlation(&ping, 1, map[string]any{"n": 1}))
	apply(t, s, env, correlation(&ping, 2, map[string]any{"n": 2}))
	assertVars(t, s.Variables(), map[string]any{"last": int64(2), "pings": int64(2)})
	if w := msgWait(t, s, "ping"); w.ID != ping.ID || len(effects(s, Subscribe))+len(effects(s, Unsubscribe)) != 0 {
		t.Fatalf("ping wait %s, outbox %+v: want it kept as it was", w.ID, s.Outbox)
	}
	if !slices.Equal(s.ActiveNodes(), []string{"work"}) {
		t.Errorf("active %v", s.ActiveNodes())
	}

	// The interrupting one cancels the task: its job and the other
	// boundary's subscription close; its own was consumed.
	apply(t, s, env, correlation(&cancel, 1, map[string]any{"reason": "customer"}))
	assertStatus(t, s, Completed)
	assertVars(t, s.Variables(), map[string]any{"why": "customer"})
	if !slices.Equal(subs(s, Unsubscribe), []string{ping.ID}) || !slices.Equal(effectWaits(s, CancelJob), []string{work.ID}) {
		t.Errorf("Unsubscribe %v, CancelJob %v", subs(s, Unsubscribe), effectWaits(s, CancelJob))
	}
}

// Every way an activity is left closes its message boundaries.
func TestMessageBoundariesCloseWithTheActivity(t *testing.T) {
	t.Run("completion", func(t *testing.T) {
		s, env := run(t, boundaries("'k'"), nil)
		cancel, ping, work := msgWait(t, s, "cancel"), msgWait(t, s, "ping"), waitAt(t, s, "work")
		flush(s)
		apply(t, s, env, jobDoneEvent(work, nil))
		assertStatus(t, s, Completed)
		if want := []string{cancel.ID, ping.ID}; !slices.Equal(subs(s, Unsubscribe), want) {
			t.Errorf("Unsubscribe %v, want %v", subs(s, Unsubscribe), want)
		}
	})
	t.Run("cancel", func(t *testing.T) {
		s, env := run(t, boundaries("'k'"), nil)
		cancel, ping := msgWait(t, s, "cancel"), msgWait(t, s, "ping")
		flush(s)
		apply(t, s, env, Event{ID: "c", Kind: Cancel})
		assertStatus(t, s, Terminated)
		if want := []string{cancel.ID, ping.ID}; !slices.Equal(subs(s, Unsubscribe), want) {
			t.Errorf("Unsubscribe %v, want %v", subs(s, Unsubscribe), want)
		}
	})
	t.Run("timer boundary", func(t *testing.T) {
		s, env := run(t, boundaries("'k'").TimerBoundary("late", "work", model.Duration("PT1H"), true).EndEvent("late_end").Flow("late", "late_end"), nil)
		cancel, ping := msgWait(t, s, "cancel"), msgWait(t, s, "ping")
		flush(s)
		fire(t, s, env, "late")
		if want := []string{cancel.ID, ping.ID}; !slices.Equal(subs(s, Unsubscribe), want) {
			t.Errorf("Unsubscribe %v, want %v", subs(s, Unsubscribe), want)
		}
	})
	t.Run("terminate end", func(t *testing.T) {
		b := model.NewBuilder("term").StartEvent("start").ParallelGateway("fork").ServiceTask("work", "", model.WithWorker("w")).EndEvent("end").
			MessageBoundary("cancel", "work", "cancel", "'k'", true).MessageBoundary("ping", "work", "ping", "'k'", false).EndEvent("b_end").
			TimerCatchEvent("t", model.Duration("PT1M")).TerminateEndEvent("stop").
			Sequence("start", "fork", "work", "end").Sequence("fork", "t", "stop").Flow("cancel", "b_end").Flow("ping", "b_end")
		s, env := run(t, b, nil)
		cancel, ping := msgWait(t, s, "cancel"), msgWait(t, s, "ping")
		flush(s)
		fire(t, s, env, "t")
		assertStatus(t, s, Completed)
		if want := []string{cancel.ID, ping.ID}; !slices.Equal(subs(s, Unsubscribe), want) {
			t.Errorf("Unsubscribe %v, want %v", subs(s, Unsubscribe), want)
		}
	})
}

// An interrupting message boundary on a sub-process closes what waits
// inside it; one on a call activity cancels the child.
func TestMessageBoundaryOnScopes(t *testing.T) {
	b := model.NewBuilder("scopes").StartEvent("start")
	sub := b.SubProcess("sp")
	sub.StartEvent("in_s").ReceiveTask("inner", "inner", "'k'").EndEvent("in_e").Sequence("in_s", "inner", "in_e")
	b.CallActivity("call", "child").EndEvent("end").Sequence("start", "sp", "call", "end")
	b.MessageBoundary("stop_sp", "sp", "stop", "'sp'", true).MessageBoundary("stop_call", "call", "stop", "'call'", true).
		EndEvent("stopped").Flow("stop_sp", "call").Flow("stop_call", "stopped")
	s, env := run(t, b, nil)
	inner := msgWait(t, s, "inner")
	flush(s)
	correlate(t, s, env, "stop_sp", 1, nil)
	if !slices.Equal(subs(s, Unsubscribe), []string{inner.ID}) || len(s.Scopes) != 1 {
		t.Fatalf("Unsubscribe %v, scopes %d", subs(s, Unsubscribe), len(s.Scopes))
	}
	child := waitAt(t, s, "call")
	flush(s)
	correlate(t, s, env, "stop_call", 1, nil)
	assertStatus(t, s, Completed)
	if got := effects(s, CancelChild); len(got) != 1 || got[0].Child != child.Child {
		t.Errorf("CancelChild %+v, want %s", got, child.Child)
	}
}

// An activity entered and left in one step takes its Subscribe effects
// back instead of unsubscribing.
func TestMessageBoundarySubscribeDroppedInTheSameStep(t *testing.T) {
	b := model.NewBuilder("same").StartEvent("start").TimerCatchEvent("wait", model.Duration("PT1M")).
		ReceiveTask("recv", "m", "'k'").EndEvent("end").MessageBoundary("b", "recv", "b", "'k'", false).EndEvent("b_end").
		Sequence("start", "wait", "recv", "end").Sequence("b", "b_end")
	s, env := run(t, b, nil)
	flush(s)
	w := waitAt(t, s, "wait")
	env.Now = w.Due
	apply(t, s, env, timerEvent(w), Event{ID: "c", Kind: Cancel})
	assertStatus(t, s, Terminated)
	if len(effects(s, Subscribe))+len(effects(s, Unsubscribe)) != 0 {
		t.Errorf("outbox %+v, want neither Subscribe nor Unsubscribe", s.Outbox)
	}
}

// A message boundary whose key cannot be evaluated faults its activity
// before it starts any work; a retry once the key is set arms it.
func TestMessageBoundaryKeyFault(t *testing.T) {
	for _, kind := range []string{"worker", "operation", "sub-process", "call", "receive", "multi-instance"} {
		t.Run(kind, func(t *testing.T) {
			b := model.NewBuilder("kf").StartEvent("start").ParallelGateway("fork")
			switch kind {
			case "worker":
				b.ServiceTask("act", "", model.WithWorker("w"))
			case "operation":
				b.ServiceTask("act", "op")
			case "sub-process":
				b.SubProcess("act").StartEvent("in_s").ReceiveTask("in", "in", "'k'").EndEvent("in_e").Sequence("in_s", "in", "in_e")
			case "call":
				b.CallActivity("act", "child")
			case "receive":
				b.ReceiveTask("act", "r", "'k'")
			case "multi-instance":
				b.ReceiveTask("act", "r", "'k'", model.WithLoop(model.Loop{Cardinality: "2"}))
			}
			b.MessageBoundary("stop", "act", "stop", "key", true).EndEvent("stopped").Flow("stop", "stopped").
				TimerBoundary("sla", "act", model.Duration("PT1H"), false).EndEvent("sla_end").Flow("sla", "sla_end").
				EndEvent("end").TimerCatchEvent("later", model.Duration("PT1M")).ScriptTask("set", "'k-1'", "key").EndEvent("end2").
				Flow("start", "fork").Flow("fork", "act").Flow("act", "end").Flow("fork", "later").Sequence("later", "set", "end2")
			s, env := run(t, b, nil)
			inc := assertIncident(t, s, "act", `message boundary "stop"`, "is null")
			if inc.CauseClass != incidents.CauseExpression {
				t.Errorf("cause class %q", inc.CauseClass)
			}
			for _, k := range []EffectKind{EnqueueJob, RunOperation, StartChildEffect, Subscribe} {
				if got := effects(s, k); len(got) != 0 {
					t.Errorf("%s effects %+v, want none", k, got)
				}
			}
			if len(s.Scopes) != 1 || len(s.Waits) != 2 { // the SLA timer and "later"
				t.Errorf("scopes %d, waits %s", len(s.Scopes), dumpWaits(s))
			}
			sla := waitAt(t, s, "sla")
			fire(t, s, env, "later")
			flush(s)
			apply(t, s, env, command(IncidentRetry, inc, "c1"))
			stop := msgWait(t, s, "stop")
			if stop.Sub.Key != "k-1" || !slices.Contains(subs(s, Subscribe), stop.ID) || waitAt(t, s, "sla").ID != sla.ID {
				t.Fatalf("after the retry: stop %+v, Subscribe %v, waits %s", stop.Sub, subs(s, Subscribe), dumpWaits(s))
			}
			correlate(t, s, env, "stop", 1, nil)
			assertStatus(t, s, Completed)
		})
	}
}

// An activity stuck on an incident keeps its message boundaries open: an
// interrupting one overtakes the incident; abandoning the incident closes
// them.
func TestMessageBoundaryOnStuckActivity(t *testing.T) {
	down := true
	b := model.NewBuilder("stuck").StartEvent("start").ServiceTask("act", "op").EndEvent("end").Sequence("start", "act", "end").
		MessageBoundary("stop", "act", "stop", "'k'", true).EndEvent("stopped").Flow("stop", "stopped").
		MessageBoundary("note", "act", "note", "'k'", false).EndEvent("noted").Flow("note", "noted")
	env := newEnv(build(t, b), newExec(map[string]opFunc{"op": flaky(&down)}))
	s := start(t, env, nil)
	inc := assertIncident(t, s, "act", "down")
	stop, note := msgWait(t, s, "stop"), msgWait(t, s, "note")
	if !slices.Equal(subs(s, Subscribe), []string{note.ID, stop.ID}) {
		t.Fatalf("Subscribe %v", subs(s, Subscribe))
	}
	// A retry that fails again keeps the subscriptions.
	flush(s)
	apply(t, s, env, command(IncidentRetry, inc, "c1"))
	inc = assertIncident(t, s, "act", "down")
	if len(effects(s, Subscribe))+len(effects(s, Unsubscribe)) != 0 || msgWait(t, s, "stop").Track != inc.Track {
		t.Fatalf("after a failed retry: outbox %+v, waits %s", s.Outbox, dumpWaits(s))
	}
	flush(s)
	correlate(t, s, env, "stop", 1, nil)
	assertStatus(t, s, Completed)
	if len(s.Incidents) != 0 || !slices.Equal(subs(s, Unsubscribe), []string{note.ID}) {
		t.Errorf("incidents %+v, Unsubscribe %v", s.Incidents, subs(s, Unsubscribe))
	}

	t.Run("abandon", func(t *testing.T) {
		s := start(t, env, nil)
		inc := assertIncident(t, s, "act", "down")
		stop, note := msgWait(t, s, "stop"), msgWait(t, s, "note")
		flush(s)
		apply(t, s, env, command(IncidentAbandon, inc, "c1"))
		assertStatus(t, s, Terminated)
		if want := []string{note.ID, stop.ID}; !slices.Equal(subs(s, Unsubscribe), want) {
			t.Errorf("Unsubscribe %v, want %v", subs(s, Unsubscribe), want)
		}
	})
}

// A multi-instance receive task opens one subscription per iteration,
// keyed by its element; its boundaries are armed once, on the body.
func TestMultiInstanceReceiveTask(t *testing.T) {
	for _, sequential := range []bool{false, true} {
		t.Run(fmt.Sprintf("sequential=%v", sequential), func(t *testing.T) {
			b := model.NewBuilder("mi").StartEvent("start").
				ReceiveTask("recv", "shipped", "item", model.Output("got", "carrier"), model.WithLoop(model.Loop{
					Collection: "items", ElementVariable: "item", Sequential: sequential,
					OutputCollection: "carriers", OutputElement: "got",
				})).EndEvent("end").Sequence("start", "recv", "end").
				MessageBoundary("stop", "recv", "stop", "'k'", true).EndEvent("stopped").Flow("stop", "stopped")
			s, env := run(t, b, map[string]any{"items": []any{"a", int64(2), "c"}})
			keysOpen := func() []string {
				var out []string
				for _, w := range s.Waits {
					if w.Node == "recv" {
						out = append(out, w.Sub.Key)
					}
				}
				return out
			}
			want := []string{"a", "2", "c"}
			if sequential {
				want = want[:1]
			}
			if got := keysOpen(); !slices.Equal(got, want) || len(effects(s, Subscribe)) != len(want)+1 {
				t.Fatalf("keys %v (Subscribe %d), want %v and the boundary", got, len(effects(s, Subscribe)), want)
			}
			stop := msgWait(t, s, "stop")
			for i, key := range []string{"c", "a", "2"} {
				if sequential {
					key = []string{"a", "2", "c"}[i]
				}
				var w *Wait
				for _, x := range s.Waits {
					if x.Node == "recv" && x.Sub.Key == key {
						w = x
					}
				}
				if w == nil {
					t.Fatalf("no subscription for %q; waits %s", key, dumpWaits(s))
				}
				apply(t, s, env, correlation(w, 1, map[string]any{"carrier": "by-" + key}))
			}
			assertStatus(t, s, Completed)
			assertVars(t, s.Variables(), map[string]any{"carriers": []any{"by-a", "by-2", "by-c"}})
			if got := subs(s, Unsubscribe); !slices.Equal(got, []string{stop.ID}) {
				t.Errorf("Unsubscribe %v, want the boundary's only (%s)", got, stop.ID)
			}
		})
	}
}

// An activity that fails before it parks (an input mapping) still opens
// its message boundaries, as it arms its timers: its token stays on the
// node.
func TestMessageBoundaryArmedWhenEntryFails(t *testing.T) {
	b := model.NewBuilder("entry").StartEvent("start").ServiceTask("act", "", model.WithWorker("w"), model.Input("x", "a + 1")).
		EndEvent("end").Sequence("start", "act", "end").
		MessageBoundary("stop", "act", "stop", "'k'", true).EndEvent("stopped").Flow("stop", "stopped")
	s, env := run(t, b, map[string]any{"a": "text"})
	assertIncident(t, s, "act", `input mapping "x"`)
	stop := msgWait(t, s, "stop")
	if !slices.Equal(subs(s, Subscribe), []string{stop.ID}) {
		t.Fatalf("Subscribe %v", subs(s, Subscribe))
	}
	correlate(t, s, env, "stop", 1, nil)
	assertStatus(t, s, Completed)
	if len(s.Incidents) != 0 {
		t.Errorf("incidents %+v, want the stuck one overtaken", s.Incidents)
	}
}

// A multi-instance receive task that completes early closes the
// subscriptions of its iterations still waiting.
func TestMultiInstanceReceiveTaskCompletesEarly(t *testing.T) {
	b := model.NewBuilder("early").StartEvent("start").
		ReceiveTask("recv", "vote", "voter", model.WithLoop(model.Loop{
			Collection: "voters", ElementVariable: "voter", CompletionCondition: "nrOfCompletedInstances >= 1",
		})).EndEvent("end").Sequence("start", "recv", "end")
	s, env := run(t, b, map[string]any{"voters": []any{"ann", "bob", "cy"}})
	var others []string
	var bob *Wait
	for _, w := range s.Waits {
		if w.Sub.Key == "bob" {
			bob = w
		} else {
			others = append(others, w.ID)
		}
	}
	flush(s)
	apply(t, s, env, correlation(bob, 1, nil))
	assertStatus(t, s, Completed)
	slices.Sort(others)
	if got := subs(s, Unsubscribe); !slices.Equal(got, others) {
		t.Errorf("Unsubscribe %v, want %v", got, others)
	}
}
