package instance

import (
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/jetbpm/jetbpm/engine/model"
)

func timerProcess(t model.Timer) *model.Builder {
	return model.NewBuilder("tm").
		StartEvent("start").TimerCatchEvent("wait", t).ScriptTask("after", "'done'", "state").EndEvent("end").
		Sequence("start", "wait", "after", "end")
}

func TestTimerCatchArmsWait(t *testing.T) {
	s, _ := run(t, timerProcess(model.Duration("PT10M")), nil)
	assertStatus(t, s, Active)
	if len(s.Waits) != 1 || len(s.Tracks) != 1 {
		t.Fatalf("waits %d tracks %d", len(s.Waits), len(s.Tracks))
	}
	w, tr := s.Waits[0], s.Tracks[0]
	wantWait := Wait{
		ID: fmt.Sprintf("i1/wait/%d", tr.Activation), Kind: TimerWait, Track: tr.ID, Node: "wait",
		Due: t0.Add(10 * time.Minute), Armed: t0,
	}
	if *w != wantWait {
		t.Errorf("wait = %+v\nwant %+v", *w, wantWait)
	}
	if tr.Node != "wait" || tr.State != Waiting || !tr.EnteredAt.Equal(t0) {
		t.Errorf("track = %+v", tr)
	}
	sched := effects(s, ScheduleTimer)
	want := []Effect{{ID: "timer:" + w.ID + ":0", Kind: ScheduleTimer, Wait: w.ID, Due: w.Due, Firing: 0}}
	if !reflect.DeepEqual(sched, want) {
		t.Errorf("ScheduleTimer effects = %+v, want %+v", sched, want)
	}
}

func TestTimerFiredIgnoredEvents(t *testing.T) {
	s, env := run(t, timerProcess(model.Duration("PT10M")), nil)
	w := *s.Waits[0]
	env.Now = w.Due
	tests := map[string]Event{
		"wrong firing":   {Kind: TimerFired, Wait: w.ID, Firing: 1},
		"unknown wait":   {Kind: TimerFired, Wait: "i1/wait/999", Firing: 0},
		"other instance": {Kind: TimerFired, Wait: "i2/wait/" + w.ID[len("i1/wait/"):]},
		"no wait":        {Kind: TimerFired},
		"unknown kind":   {Kind: "bogus", Wait: w.ID},
	}
	for name, ev := range tests {
		before := snapshot(t, s)
		if n := apply(t, s, env, ev); n != 0 {
			t.Errorf("%s: applied = %d, want 0", name, n)
		}
		if snapshot(t, s) != before {
			t.Errorf("%s: state changed", name)
		}
	}
	assertStatus(t, s, Active)
}

func TestTimerFiredDuplicate(t *testing.T) {
	s, env := run(t, timerProcess(model.Duration("PT10M")), nil)
	w := fire(t, s, env, "wait")
	assertStatus(t, s, Completed)
	assertVars(t, s.Variables(), map[string]any{"state": "done"})
	before := snapshot(t, s)
	if n := apply(t, s, env, timerEvent(w)); n != 0 {
		t.Errorf("duplicate applied = %d", n)
	}
	if snapshot(t, s) != before {
		t.Error("duplicate changed the state")
	}

	// A duplicate within the same batch is skipped too.
	s, env = run(t, model.NewBuilder("tm2").
		StartEvent("start").TimerCatchEvent("wait", model.Duration("PT10M")).TimerCatchEvent("wait2", model.Duration("PT10M")).EndEvent("end").
		Sequence("start", "wait", "wait2", "end"), nil)
	ev := timerEvent(s.Waits[0])
	env.Now = s.Waits[0].Due
	if n := apply(t, s, env, ev, ev); n != 1 {
		t.Errorf("batch with duplicate applied = %d, want 1", n)
	}
	if got := s.ActiveNodes(); !slices.Equal(got, []string{"wait2"}) {
		t.Errorf("ActiveNodes = %v", got)
	}
}

func TestTimerDates(t *testing.T) {
	t.Run("past date passes through", func(t *testing.T) {
		s, _ := run(t, timerProcess(model.Date("2020-01-01T00:00:00Z")), nil)
		assertStatus(t, s, Completed)
		assertVars(t, s.Variables(), map[string]any{"state": "done"})
		if n := len(effects(s, ScheduleTimer)); n != 0 {
			t.Errorf("ScheduleTimer effects: %d", n)
		}
	})
	t.Run("now passes through", func(t *testing.T) {
		s, _ := run(t, timerProcess(model.Date(t0.Format(time.RFC3339))), nil)
		assertStatus(t, s, Completed)
	})
	t.Run("future date waits until then", func(t *testing.T) {
		s, env := run(t, timerProcess(model.Date("2026-12-24T18:00:00+01:00")), nil)
		assertStatus(t, s, Active)
		w := waitAt(t, s, "wait")
		if want := time.Date(2026, 12, 24, 17, 0, 0, 0, time.UTC); !w.Due.Equal(want) {
			t.Errorf("due = %v, want %v", w.Due, want)
		}
		fire(t, s, env, "wait")
		assertStatus(t, s, Completed)
	})
}

// TestTimerLoopDistinctWaitIDs: re-entering a timer catch node creates a
// new wait id every time.
func TestTimerLoopDistinctWaitIDs(t *testing.T) {
	b := model.NewBuilder("loop").
		StartEvent("start").ScriptTask("init", "0", "n").
		ExclusiveGateway("merge").TimerCatchEvent("tick", model.Duration("PT1M")).
		ScriptTask("inc", "n + 1", "n").ExclusiveGateway("more").EndEvent("end").
		Sequence("start", "init", "merge", "tick", "inc", "more").
		Flow("more", "merge", model.When("n < 5")).
		DefaultFlow("more", "end")
	s, env := run(t, b, nil)
	var ids []string
	for s.Status == Active {
		if len(ids) > 10 {
			t.Fatal("loop does not end")
		}
		w := fire(t, s, env, "tick")
		ids = append(ids, w.ID)
		if sched := effects(s, ScheduleTimer); s.Status == Active && (len(sched) == 0 || sched[len(sched)-1].Wait == w.ID) {
			t.Fatalf("no new ScheduleTimer after firing %s", w.ID)
		}
	}
	assertStatus(t, s, Completed)
	assertVars(t, s.Variables(), map[string]any{"n": int64(5)})
	if len(ids) != 5 || len(slices.Compact(slices.Sorted(slices.Values(ids)))) != 5 {
		t.Errorf("wait ids = %v, want 5 distinct", ids)
	}
	if !s.EndedAt.Equal(t0.Add(5 * time.Minute)) {
		t.Errorf("EndedAt = %v", s.EndedAt)
	}
}

// boundarySub: start → sub(inner timer "inner" PT10M) → after → end, with
// a timer boundary "bnd" on sub leading to "onTimer" → "bEnd".
func boundarySub(timer model.Timer, interrupting bool) *model.Builder {
	b := model.NewBuilder("bs").StartEvent("start")
	b.SubProcess("sub").StartEvent("s_start").TimerCatchEvent("inner", model.Duration("PT10M")).EndEvent("s_end").
		Sequence("s_start", "inner", "s_end")
	b.TimerBoundary("bnd", "sub", timer, interrupting).
		ScriptTask("onTimer", "(fired ?? 0) + 1", "fired").EndEvent("bEnd").
		Sequence("bnd", "onTimer", "bEnd")
	return b.ScriptTask("after", "'normal'", "path").EndEvent("end").
		Sequence("start", "sub", "after", "end")
}

func TestTimerBoundaryInterrupting(t *testing.T) {
	s, env := run(t, boundarySub(model.Duration("PT5M"), true), nil)
	assertStatus(t, s, Active)
	bw := waitAt(t, s, "bnd")
	if bw.Kind != BoundaryWait || !bw.Due.Equal(t0.Add(5*time.Minute)) || bw.Track != s.track(bw.Track).ID || s.track(bw.Track).Node != "sub" {
		t.Errorf("boundary wait = %+v", bw)
	}
	inner := waitAt(t, s, "inner").ID
	flush(s)

	fire(t, s, env, "bnd")
	assertStatus(t, s, Completed)
	assertVars(t, s.Variables(), map[string]any{"fired": int64(1)})
	assertNoVar(t, s.Variables(), "path")
	if got := effectWaits(s, CancelTimer); !slices.Contains(got, inner) {
		t.Errorf("cancelled = %v, want the inner timer %s", got, inner)
	}
	if len(s.Scopes) != 1 || len(s.Waits) != 0 {
		t.Errorf("scopes %d waits %s", len(s.Scopes), dumpWaits(s))
	}
}

// TestTimerBoundaryInterruptingNoSpuriousCancel: the boundary timer that
// just fired needs no CancelTimer; only the timers it interrupts do.
func TestTimerBoundaryInterruptingNoSpuriousCancel(t *testing.T) {
	s, env := run(t, boundarySub(model.Duration("PT5M"), true), nil)
	inner := waitAt(t, s, "inner").ID
	flush(s)
	fire(t, s, env, "bnd")
	if got := effectWaits(s, CancelTimer); !slices.Equal(got, []string{inner}) {
		t.Errorf("cancelled = %v, want only [%s]", got, inner)
	}
}

func TestTimerBoundaryNonInterruptingCycle(t *testing.T) {
	s, env := run(t, boundarySub(model.Cycle("R2/PT1M"), false), nil)
	w := *waitAt(t, s, "bnd")
	if w.Firing != 0 || !w.Due.Equal(t0.Add(time.Minute)) {
		t.Fatalf("first boundary wait = %+v", w)
	}
	flush(s)

	// First firing: a new track runs the boundary path; the wait is re-armed
	// with the same id and the next firing number.
	fire(t, s, env, "bnd")
	assertStatus(t, s, Active)
	assertVars(t, s.Variables(), map[string]any{"fired": int64(1)})
	w1 := *waitAt(t, s, "bnd")
	if w1.ID != w.ID || w1.Firing != 1 || !w1.Due.Equal(t0.Add(2*time.Minute)) || !w1.Armed.Equal(t0) {
		t.Errorf("re-armed wait = %+v", w1)
	}
	want := []Effect{{ID: "timer:" + w.ID + ":1", Kind: ScheduleTimer, Wait: w.ID, Due: w1.Due, Firing: 1}}
	if got := effects(s, ScheduleTimer); !reflect.DeepEqual(got, want) {
		t.Errorf("re-arm effects = %+v, want %+v", got, want)
	}
	if len(effects(s, CancelTimer)) != 0 {
		t.Errorf("unexpected cancels: %+v", effects(s, CancelTimer))
	}
	if got := s.ActiveNodes(); !sameNodes(got, []string{"sub", "inner"}) {
		t.Errorf("ActiveNodes = %v", got)
	}
	// The stale first firing, delivered again, is ignored.
	if n := apply(t, s, env, timerEvent(&w)); n != 0 {
		t.Errorf("stale firing applied = %d", n)
	}
	flush(s)

	// Second firing: the last repetition, not re-armed.
	fire(t, s, env, "bnd")
	assertVars(t, s.Variables(), map[string]any{"fired": int64(2)})
	for _, x := range s.Waits {
		if x.Node == "bnd" {
			t.Errorf("boundary re-armed after its last repetition: %+v", x)
		}
	}
	if n := len(effects(s, ScheduleTimer)); n != 0 {
		t.Errorf("ScheduleTimer after the last repetition: %+v", s.Outbox)
	}
	if n := apply(t, s, env, Event{Kind: TimerFired, Wait: w.ID, Firing: 2}); n != 0 {
		t.Errorf("a third firing applied = %d", n)
	}

	// The sub-process still completes normally.
	fire(t, s, env, "inner")
	assertStatus(t, s, Completed)
	assertVars(t, s.Variables(), map[string]any{"path": "normal", "fired": int64(2)})
}

func TestTimerBoundaryDisarmedOnCompletion(t *testing.T) {
	for _, tt := range []struct {
		name         string
		timer        model.Timer
		interrupting bool
	}{
		{"interrupting", model.Duration("PT1H"), true},
		{"non-interrupting cycle", model.Cycle("R/PT20M"), false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s, env := run(t, boundarySub(tt.timer, tt.interrupting), nil)
			bnd := waitAt(t, s, "bnd").ID
			flush(s)
			fire(t, s, env, "inner")
			assertStatus(t, s, Completed)
			assertVars(t, s.Variables(), map[string]any{"path": "normal"})
			assertNoVar(t, s.Variables(), "fired")
			if got := effectWaits(s, CancelTimer); !slices.Equal(got, []string{bnd}) {
				t.Errorf("cancelled = %v, want [%s]", got, bnd)
			}
			if len(s.Waits) != 0 {
				t.Errorf("waits left: %s", dumpWaits(s))
			}
			// The cancelled boundary firing late is ignored.
			if n := apply(t, s, env, Event{Kind: TimerFired, Wait: bnd}); n != 0 {
				t.Errorf("late boundary applied = %d", n)
			}
		})
	}
}

// TestTimerBoundaryIdsPerActivation: a sub-process entered twice gets a new
// boundary wait id each time.
func TestTimerBoundaryIdsPerActivation(t *testing.T) {
	b := model.NewBuilder("again").StartEvent("start").ExclusiveGateway("merge")
	b.SubProcess("sub").StartEvent("s_start").TimerCatchEvent("inner", model.Duration("PT1M")).EndEvent("s_end").
		Sequence("s_start", "inner", "s_end")
	b.TimerBoundary("bnd", "sub", model.Duration("PT1H"), true).EndEvent("bEnd").Flow("bnd", "bEnd")
	b.ScriptTask("inc", "(n ?? 0) + 1", "n").ExclusiveGateway("more").EndEvent("end").
		Sequence("start", "merge", "sub", "inc", "more").
		Flow("more", "merge", model.When("n < 2")).
		DefaultFlow("more", "end")
	s, env := run(t, b, nil)
	first := waitAt(t, s, "bnd").ID
	fire(t, s, env, "inner")
	second := waitAt(t, s, "bnd").ID
	if first == second {
		t.Errorf("boundary wait id reused: %s", first)
	}
	fire(t, s, env, "inner")
	assertStatus(t, s, Completed)
}
