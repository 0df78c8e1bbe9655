package instance

import (
	"slices"
	"testing"
	"time"

	"github.com/jetbpm/jetbpm/engine/model"
)

// A non-interrupting boundary timer on a cron cycle fires at each match,
// re-armed for the match after the previous due time.
func TestTimerBoundaryCron(t *testing.T) {
	s, env := run(t, boundarySub(model.Cycle("0 */2 * * * *"), false), nil)
	for i := range 3 {
		w := fire(t, s, env, "bnd")
		if want := t0.Add(time.Duration(2*(i+1)) * time.Minute); w.Firing != i || !w.Due.Equal(want) {
			t.Fatalf("firing %d: wait %+v, want due %v", i, w, want)
		}
	}
	if w := waitAt(t, s, "bnd"); w.Firing != 3 || !w.Due.Equal(t0.Add(8*time.Minute)) {
		t.Fatalf("re-armed wait %+v, want the 09:08 match", w)
	}
	assertVars(t, s.Variables(), map[string]any{"fired": int64(3)})
	fire(t, s, env, "inner")
	assertStatus(t, s, Completed)
	assertVars(t, s.Variables(), map[string]any{"path": "normal", "fired": int64(3)})
}

// A non-interrupting timer event sub-process on a Quartz cron fires at
// each match until its scope ends.
func TestCronEventSub(t *testing.T) {
	b := espWork()
	b.EventSubProcess("tick", false).
		TimerStartEvent("every", model.Timer{Type: model.TimerCycle, Value: "0 0/10 * ? * SUN", Quartz: true}). // t0 is a Sunday
		ScriptTask("count", "(ticks ?? 0) + 1", "ticks").EndEvent("tickEnd").Sequence("every", "count", "tickEnd")
	s, env := run(t, b, nil)
	for i := range 3 {
		w := fire(t, s, env, "every")
		if want := t0.Add(time.Duration(10*(i+1)) * time.Minute); w.Firing != i || !w.Due.Equal(want) {
			t.Fatalf("firing %d: wait %+v, want due %v", i, w, want)
		}
	}
	assertVars(t, s.Variables(), map[string]any{"ticks": int64(3)})
	apply(t, s, env, jobDoneEvent(waitAt(t, s, "work"), nil))
	assertStatus(t, s, Completed)
	if slices.ContainsFunc(s.Waits, func(w *Wait) bool { return w.Node == "every" }) {
		t.Fatalf("the cron stays armed after its scope ended: %s", dumpWaits(s))
	}
}
