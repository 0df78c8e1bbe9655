package model_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jetbpm/jetbpm/engine/model"
)

func TestParsePeriod(t *testing.T) {
	tests := []struct {
		in   string
		want model.Period
	}{
		{"PT5S", model.Period{Clock: 5 * time.Second}},
		{"PT0.5S", model.Period{Clock: 500 * time.Millisecond}},
		{"PT0,5S", model.Period{Clock: 500 * time.Millisecond}},
		{"PT1H30M", model.Period{Clock: 90 * time.Minute}},
		{"PT0S", model.Period{}},
		{"P1D", model.Period{Days: 1}},
		{"P1W", model.Period{Days: 7}},
		{"P1M", model.Period{Months: 1}},
		{"PT1M", model.Period{Clock: time.Minute}},
		{"P1Y2M3DT4H5M6.5S", model.Period{Years: 1, Months: 2, Days: 3, Clock: 4*time.Hour + 5*time.Minute + 6500*time.Millisecond}},
	}
	for _, tt := range tests {
		got, err := model.ParsePeriod(tt.in)
		if err != nil {
			t.Errorf("ParsePeriod(%q): %v", tt.in, err)
			continue
		}
		if got != tt.want {
			t.Errorf("ParsePeriod(%q) = %+v, want %+v", tt.in, got, tt.want)
		}
	}
}

func TestParsePeriodRefusals(t *testing.T) {
	for _, in := range []string{
		"", "P", "PT", "5S", "P1S", "PT1D", "P1.5D", "P-1D", "PT-1S", "PTT1S", "P1X", "PT1X",
		"PT5", "P1", "PT.S", "p1d", " PT5S",
	} {
		p, err := model.ParsePeriod(in)
		if err == nil {
			t.Errorf("ParsePeriod(%q) = %+v, want an error", in, p)
			continue
		}
		if !strings.Contains(err.Error(), `"`+in+`"`) {
			t.Errorf("ParsePeriod(%q) error %q does not name the input", in, err)
		}
		if p != (model.Period{}) {
			t.Errorf("ParsePeriod(%q) returned %+v with its error", in, p)
		}
	}
}

// A dangling T designator names no time unit: "PT" alone is refused, so
// "P1DT" must be too (ISO 8601, Zeebe and java.time refuse it).
func TestParsePeriodRefusesTrailingT(t *testing.T) {
	if p, err := model.ParsePeriod("P1DT"); err == nil {
		t.Errorf(`ParsePeriod("P1DT") = %+v, want an error (T without a time unit)`, p)
	}
}

// Clock components that overflow time.Duration must be refused, never
// wrapped into a negative period (ParsePeriod promises to refuse negative
// durations; a negative timer would fire at once).
func TestParsePeriodOverflow(t *testing.T) {
	for _, in := range []string{"PT3000000H", "PT9999999999H", "PT2562047H2562047H", "PT99999999999999999999S"} {
		p, err := model.ParsePeriod(in)
		if err == nil && p.Clock < 0 {
			t.Errorf("ParsePeriod(%q) = %+v: overflowed into a negative duration; want an error", in, p)
		}
	}
}

func TestPeriodAddTo(t *testing.T) {
	base := time.Date(2026, 3, 10, 8, 0, 0, 0, time.UTC)
	p, err := model.ParsePeriod("P1Y2M3DT4H5M6.5S")
	if err != nil {
		t.Fatal(err)
	}
	want := time.Date(2027, 5, 13, 12, 5, 6, 500_000_000, time.UTC)
	if got := p.AddTo(base); !got.Equal(want) {
		t.Errorf("AddTo = %v, want %v", got, want)
	}
	if !(model.Period{}).IsZero() || p.IsZero() {
		t.Error("IsZero wrong")
	}
	// A day is a calendar day: across a DST change it is not 24 hours.
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err == nil {
		before := time.Date(2026, 3, 28, 12, 0, 0, 0, berlin)
		d, _ := model.ParsePeriod("P1D")
		if got := d.AddTo(before); got.Sub(before) != 23*time.Hour || got.Hour() != 12 {
			t.Errorf("P1D across DST = %v (%v later), want 12:00 the next day", got, got.Sub(before))
		}
	}
}

// P1M is one calendar month. From January 31 that is the end of February,
// as in ISO 8601/XML Schema date arithmetic (and java.time, which Camunda
// and Zeebe use): the day is clamped to the month's last day, not carried
// into March.
func TestPeriodMonthClampsToEndOfMonth(t *testing.T) {
	p, err := model.ParsePeriod("P1M")
	if err != nil {
		t.Fatal(err)
	}
	jan31 := time.Date(2026, 1, 31, 9, 0, 0, 0, time.UTC)
	if got, want := p.AddTo(jan31), time.Date(2026, 2, 28, 9, 0, 0, 0, time.UTC); !got.Equal(want) {
		t.Errorf("2026-01-31 + P1M = %v, want %v", got, want)
	}
	if got, want := p.AddTo(time.Date(2026, 3, 15, 0, 0, 0, 0, time.UTC)), time.Date(2026, 4, 15, 0, 0, 0, 0, time.UTC); !got.Equal(want) {
		t.Errorf("2026-03-15 + P1M = %v, want %v", got, want)
	}
}

// timerOf validates a process holding tm on a catch event and returns the
// parsed timer.
func timerOf(t *testing.T, tm model.Timer) (*model.Timer, error) {
	t.Helper()
	p, err := model.NewBuilder("p").StartEvent("s").TimerCatchEvent("t", tm).EndEvent("e").Sequence("s", "t", "e").Build()
	if err != nil {
		return nil, err
	}
	return p.Node("t").Timer, nil
}

func mustTimer(t *testing.T, tm model.Timer) *model.Timer {
	t.Helper()
	got, err := timerOf(t, tm)
	if err != nil {
		t.Fatalf("timer %+v: %v", tm, err)
	}
	return got
}

var armed = time.Date(2026, 5, 4, 10, 0, 0, 0, time.UTC)

func TestTimerDueDuration(t *testing.T) {
	tm := mustTimer(t, model.Duration("PT1H30M"))
	due, ok := tm.Due(armed, 0)
	if !ok || !due.Equal(armed.Add(90*time.Minute)) {
		t.Errorf("Due(0) = %v, %v; want %v, true", due, ok, armed.Add(90*time.Minute))
	}
	if _, ok := tm.Due(armed, 1); ok {
		t.Error("a duration timer fires once")
	}
	if tm.Repeats() {
		t.Error("duration timer Repeats")
	}
	// Surrounding spaces (as in pretty-printed XML) are trimmed.
	tm = mustTimer(t, model.Duration(" PT5S\n"))
	if due, _ := tm.Due(armed, 0); !due.Equal(armed.Add(5 * time.Second)) {
		t.Errorf("Due = %v", due)
	}
}

func TestTimerDueDate(t *testing.T) {
	tm := mustTimer(t, model.Date("2026-12-01T10:00:00+02:00"))
	want := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
	for _, a := range []time.Time{armed, armed.Add(1000 * time.Hour)} {
		if due, ok := tm.Due(a, 0); !ok || !due.Equal(want) {
			t.Errorf("Due(%v, 0) = %v, %v; want %v (independent of armed)", a, due, ok, want)
		}
	}
	if _, ok := tm.Due(armed, 1); ok {
		t.Error("a date timer fires once")
	}
	tm = mustTimer(t, model.Date("2026-12-01T10:00:00.250Z"))
	if due, _ := tm.Due(armed, 0); !due.Equal(time.Date(2026, 12, 1, 10, 0, 0, 250_000_000, time.UTC)) {
		t.Errorf("fractional date Due = %v", due)
	}
}

func TestTimerDueCycle(t *testing.T) {
	tm := mustTimer(t, model.Cycle("R3/PT10M"))
	if !tm.Repeats() {
		t.Error("R3 does not repeat")
	}
	for i := 0; i < 3; i++ {
		due, ok := tm.Due(armed, i)
		if want := armed.Add(time.Duration(i+1) * 10 * time.Minute); !ok || !due.Equal(want) {
			t.Errorf("R3/PT10M firing %d = %v, %v; want %v, true", i, due, ok, want)
		}
	}
	for _, i := range []int{3, 4, 100} {
		if due, ok := tm.Due(armed, i); ok {
			t.Errorf("R3/PT10M firing %d = %v, ok; want not ok", i, due)
		}
	}

	tm = mustTimer(t, model.Cycle("R/PT1M"))
	if !tm.Repeats() {
		t.Error("R/PT1M does not repeat")
	}
	for _, i := range []int{0, 1, 59, 1000} {
		due, ok := tm.Due(armed, i)
		if want := armed.Add(time.Duration(i+1) * time.Minute); !ok || !due.Equal(want) {
			t.Errorf("R/PT1M firing %d = %v, %v; want %v, true", i, due, ok, want)
		}
	}

	tm = mustTimer(t, model.Cycle("R1/PT1M"))
	if tm.Repeats() {
		t.Error("R1 repeats")
	}
	if _, ok := tm.Due(armed, 1); ok {
		t.Error("R1 fires twice")
	}
}

func TestTimerDueCycleWithStart(t *testing.T) {
	tm := mustTimer(t, model.Cycle("R2/2026-01-01T00:00:00Z/PT1H"))
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, a := range []time.Time{armed, start.Add(-48 * time.Hour)} {
		var got []time.Time
		for i := 0; ; i++ {
			due, ok := tm.Due(a, i)
			if !ok {
				break
			}
			if i > 10 {
				t.Fatal("R2 fires more than twice")
			}
			got = append(got, due)
		}
		if len(got) != 2 {
			t.Fatalf("armed %v: %d firings, want 2", a, len(got))
		}
		// The schedule is counted from the cycle's start, not from armed.
		if !got[0].Equal(start.Add(time.Hour)) || !got[1].Equal(start.Add(2*time.Hour)) {
			t.Errorf("armed %v: firings %v, want start+1h, start+2h", a, got)
		}
	}
}

func TestTimerRefusals(t *testing.T) {
	tests := []struct {
		timer model.Timer
		want  string // in the message
	}{
		{model.Duration("PT"), `"PT"`},
		{model.Duration("5 minutes"), `"5 minutes"`},
		{model.Duration(""), `""`},
		{model.Date("2026-01-01T10:00:00"), `"2026-01-01T10:00:00"`},
		{model.Date("2026-01-01"), `"2026-01-01"`},
		{model.Date("tomorrow"), `"tomorrow"`},
		{model.Cycle("R0/PT1M"), `"R0/PT1M"`},
		{model.Cycle("Rx/PT1M"), `"Rx/PT1M"`},
		{model.Cycle("R-1/PT1M"), `"R-1/PT1M"`},
		{model.Cycle("R3/PT0S"), `"R3/PT0S"`},
		{model.Cycle("R/P0D"), `"R/P0D"`},
		{model.Cycle("0 0 * * *"), "has 5 fields, want 6"},
		{model.Cycle("0 0 0 30 2 *"), "never fires"},
		{model.Timer{Type: model.TimerCycle, Value: "0 0 12 * * *", Quartz: true}, "Quartz wants exactly one of them to be ?"},
		{model.Cycle("@reboot"), "unknown macro"},
		{model.Cycle("PT10M"), `"PT10M"`},
		{model.Cycle("R3/PT10M/x/y"), `"R3/PT10M/x/y"`},
		{model.Cycle("R2/2026-01-01T00:00:00/PT1H"), `"2026-01-01T00:00:00"`},
		{model.Cycle("R3/PT1X"), `"PT1X"`},
		{model.Timer{Type: "weekly", Value: "PT1M"}, `"weekly"`},
	}
	for _, tt := range tests {
		_, err := timerOf(t, tt.timer)
		if err == nil {
			t.Errorf("timer %+v validated, want an error", tt.timer)
			continue
		}
		var me *model.Error
		if !errors.As(err, &me) || me.Element != "t" {
			t.Errorf("timer %+v: error %v does not name node t", tt.timer, err)
			continue
		}
		if !strings.Contains(me.Msg, tt.want) {
			t.Errorf("timer %+v: message %q does not contain %s", tt.timer, me.Msg, tt.want)
		}
	}
}
