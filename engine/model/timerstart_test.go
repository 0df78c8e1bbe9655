package model_test

import (
	"testing"
	"time"

	"github.com/jetbpm/jetbpm/engine/model"
)

func TestTimerStartNextFire(t *testing.T) {
	s := time.Second
	cases := []struct {
		name       string
		timer      model.Timer
		now        time.Time
		from       int
		wantFiring int
		wantDue    time.Time
		wantOK     bool
	}{
		{"R3 first", model.Cycle("R3/PT1S"), armed, 0, 0, armed.Add(s), true},
		{"R3 second, on time", model.Cycle("R3/PT1S"), armed.Add(s + 10*time.Millisecond), 1, 1, armed.Add(2 * s), true},
		{"R3 third", model.Cycle("R3/PT1S"), armed.Add(2 * s), 2, 2, armed.Add(3 * s), true},
		{"R3 done", model.Cycle("R3/PT1S"), armed.Add(3 * s), 3, 0, time.Time{}, false},
		// Down for ten periods: the missed firings count, none is made up.
		{"R3 missed while down", model.Cycle("R3/PT1S"), armed.Add(10 * s), 1, 0, time.Time{}, false},
		{"endless, missed while down", model.Cycle("R/PT1M"), armed.Add(10*time.Minute + 30*s), 1, 10, armed.Add(11 * time.Minute), true},
		{"cycle with a past start", model.Cycle("R/2020-01-01T00:00:00Z/P1D"), armed, 0, 2315, time.Date(2026, 5, 5, 0, 0, 0, 0, time.UTC), true},
		{"past date fires once", model.Date("2020-01-01T00:00:00Z"), armed, 0, 0, time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC), true},
		{"past date, after its fire", model.Date("2020-01-01T00:00:00Z"), armed, 1, 0, time.Time{}, false},
		{"duration from the deploy", model.Duration("PT1H"), armed.Add(s), 0, 0, armed.Add(time.Hour), true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tm := mustTimer(t, tc.timer)
			firing, due, ok := tm.NextFire(armed, time.Time{}, tc.now, tc.from)
			if ok != tc.wantOK || ok && (firing != tc.wantFiring || !due.Equal(tc.wantDue)) {
				t.Fatalf("NextFire = %d, %v, %v; want %d, %v, %v", firing, due, ok, tc.wantFiring, tc.wantDue, tc.wantOK)
			}
		})
	}
}

// TestTimerCron checks cron cycles: the file's dialect decides what a day
// number means, each fire follows the previous one, and a timer start
// missed while down fires at the first match after now.
func TestTimerCron(t *testing.T) {
	day := func(d, h int) time.Time { return time.Date(2026, 5, d, h, 0, 0, 0, time.UTC) } // armed: Monday 4 May, 10:00
	weekdays := mustTimer(t, model.Cycle("0 0 9 * * MON-FRI"))
	if !weekdays.IsCron() || !weekdays.Repeats() {
		t.Fatal("a cron cycle is not a repeating cron timer")
	}
	for i, want := range []time.Time{day(5, 9), day(6, 9), day(7, 9), day(8, 9), day(11, 9)} {
		if due, ok := weekdays.Due(armed, i); !ok || !due.Equal(want) {
			t.Fatalf("Due(armed, %d) = %v, %v; want %v", i, due, ok, want)
		}
		if i > 0 {
			if due, ok := weekdays.Following(armed, day(4+i, 9), i); !ok || !due.Equal(want) {
				t.Fatalf("Following(%v, %d) = %v, %v; want %v", day(4+i, 9), i, due, ok, want)
			}
		}
	}
	// Quartz's day 1 is Sunday, Spring's Monday.
	quartz := mustTimer(t, model.Timer{Type: model.TimerCycle, Value: "0 0 9 ? * 1", Quartz: true})
	spring := mustTimer(t, model.Cycle("0 0 9 ? * 1"))
	if due, _ := quartz.Due(armed, 0); !due.Equal(day(10, 9)) {
		t.Errorf("Quartz day 1 fires %v, want Sunday %v", due, day(10, 9))
	}
	if due, _ := spring.Due(armed, 0); !due.Equal(day(11, 9)) {
		t.Errorf("Spring day 1 fires %v, want Monday %v", due, day(11, 9))
	}
	// Down from Tuesday's fire to Thursday 10:00: one fire, Friday's.
	firing, due, ok := weekdays.NextFire(armed, day(5, 9), day(7, 10), 1)
	if !ok || firing != 1 || !due.Equal(day(8, 9)) {
		t.Fatalf("NextFire after downtime = %d, %v, %v; want 1, %v", firing, due, ok, day(8, 9))
	}
	// A node whose clock lags behind the fire it handles schedules the next.
	if _, due, _ := weekdays.NextFire(armed, day(8, 9), day(8, 8), 2); !due.Equal(day(11, 9)) {
		t.Fatalf("NextFire with a lagging clock = %v, want %v", due, day(11, 9))
	}
}

func TestTimerStartsOfAProcess(t *testing.T) {
	p, err := model.NewBuilder("p").
		TimerStartEvent("tick", model.Cycle("R/PT1H")).EndEvent("end").Sequence("tick", "end").
		Build()
	if err != nil {
		t.Fatal(err)
	}
	if got := p.TimerStarts(); len(got) != 1 || got[0].ID != "tick" {
		t.Fatalf("timer starts %v", got)
	}
}
