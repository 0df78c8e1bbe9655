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
			firing, due, ok := tm.NextFire(armed, tc.now, tc.from)
			if ok != tc.wantOK || ok && (firing != tc.wantFiring || !due.Equal(tc.wantDue)) {
				t.Fatalf("NextFire = %d, %v, %v; want %d, %v, %v", firing, due, ok, tc.wantFiring, tc.wantDue, tc.wantOK)
			}
		})
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
