package model

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/jetbpm/jetbpm/engine/cron"
	"github.com/jetbpm/jetbpm/expression"
)

// TimerType says how a timer's value is read.
type TimerType string

// Timer definitions, as in BPMN's timerEventDefinition.
const (
	TimerDuration TimerType = "duration" // ISO-8601 duration, from the moment the timer is armed
	TimerDate     TimerType = "date"     // an RFC 3339 / ISO-8601 date-time
	TimerCycle    TimerType = "cycle"    // R[n]/duration, R[n]/start/duration or a cron expression
)

// Timer is a timer event definition. Value keeps the ISO-8601 or cron
// text.
//
// Expr, when set instead of Value, is an expression (FEEL "=...", JUEL
// "${...}" or expr-lang) evaluated over the variables the timer's node
// sees each time the timer is armed: a catch event when its token
// arrives, a boundary when its activity is entered, an event
// sub-process's start when its scope starts. Its value must be a string
// in the form Type wants (Resolve). A timer start event takes no
// expression: there are no variables before the instance starts.
//
// A cycle is a cron expression when it is not R[n]/...: six fields with
// seconds first, a macro such as @daily, optionally after CRON_TZ=<zone>
// (package engine/cron). Quartz says how to read it: Camunda 7's Quartz
// when set (the BPMN importer sets it for Camunda 7 files), else Zeebe's
// Spring syntax. A cron cycle repeats without end, its first fire being
// the first match after the timer is armed.
type Timer struct {
	Type   TimerType `msgpack:"type"`
	Value  string    `msgpack:"value"`
	Expr   string    `msgpack:"expr,omitempty"`
	Quartz bool      `msgpack:"quartz,omitempty"`

	spec timerSpec
	expr *expression.Expression
}

// Resolve returns the timer to arm given the variables its node sees: t
// itself, or, when t's value is an expression, a timer of the value it
// evaluates to (see WithValue).
func (t *Timer) Resolve(vars map[string]any) (*Timer, error) {
	if t.Expr == "" {
		return t, nil
	}
	if t.expr == nil {
		return nil, fmt.Errorf("timer expression %q was not compiled (the process was not validated)", t.Expr)
	}
	v, err := t.expr.Eval(vars)
	if err != nil {
		return nil, fmt.Errorf("timer %s: %w", t.Type, err)
	}
	s, ok := v.(string)
	if !ok {
		return nil, fmt.Errorf("timer %s %q gave %v (%T), want a string such as %q", t.Type, t.Expr, v, v, timerExample[t.Type])
	}
	r, err := t.WithValue(s)
	if err != nil {
		return nil, fmt.Errorf("timer %s %q gave %q: %w", t.Type, t.Expr, s, err)
	}
	return r, nil
}

// WithValue returns a copy of t (without its expression) whose value is
// v, parsed.
func (t *Timer) WithValue(v string) (*Timer, error) {
	r := &Timer{Type: t.Type, Value: strings.TrimSpace(v), Quartz: t.Quartz}
	if err := r.parse(); err != nil {
		return nil, err
	}
	return r, nil
}

var timerExample = map[TimerType]string{TimerDuration: "PT15M", TimerDate: "2026-12-24T09:00:00Z", TimerCycle: "R3/PT1H"}

type timerSpec struct {
	period  Period
	at      time.Time // TimerDate, or the start of a cycle
	repeats int       // cycle repetitions; -1 = unbounded
	cron    *cron.Schedule
}

// Period is an ISO-8601 duration kept in calendar units, so "P1M" means one
// calendar month from the moment it is applied.
type Period struct {
	Years, Months, Days int
	Clock               time.Duration
}

// AddTo returns t plus the period. Years and months move the calendar
// month and clamp the day to that month's last (Jan 31 + P1M = Feb 28), as
// ISO 8601 and java.time do; then days and clock time are added.
func (p Period) AddTo(t time.Time) time.Time {
	if p.Years != 0 || p.Months != 0 {
		y, m, d := t.Date()
		first := time.Date(y+p.Years, m+time.Month(p.Months), 1, 0, 0, 0, 0, t.Location())
		last := first.AddDate(0, 1, -1).Day()
		hh, mm, ss := t.Clock()
		t = time.Date(first.Year(), first.Month(), min(d, last), hh, mm, ss, t.Nanosecond(), t.Location())
	}
	return t.AddDate(0, 0, p.Days).Add(p.Clock)
}

// IsZero reports whether p adds nothing.
func (p Period) IsZero() bool { return p == Period{} }

// Due returns when the timer fires for the firing-th time (0 = first),
// counting from armed, the moment its node was entered. ok is false when a
// cycle has no more repetitions.
func (t *Timer) Due(armed time.Time, firing int) (due time.Time, ok bool) {
	switch t.Type {
	case TimerDate:
		return t.spec.at, firing == 0
	case TimerDuration:
		return t.spec.period.AddTo(armed), firing == 0
	default:
		if t.spec.repeats >= 0 && firing >= t.spec.repeats {
			return time.Time{}, false
		}
		if t.spec.cron != nil {
			due = armed
			for i := 0; i <= firing && !due.IsZero(); i++ {
				due = t.spec.cron.Next(due)
			}
			return due, !due.IsZero()
		}
		start := armed
		if !t.spec.at.IsZero() {
			start = t.spec.at
		}
		due = start
		for i := 0; i <= firing; i++ {
			due = t.spec.period.AddTo(due)
		}
		return due, true
	}
}

// Following returns when the timer fires for the firing-th time, as Due
// does, given prev, when it fired for the one before; it does not replay
// the earlier fires.
func (t *Timer) Following(armed, prev time.Time, firing int) (time.Time, bool) {
	if t.Type != TimerCycle || firing == 0 || prev.IsZero() {
		return t.Due(armed, firing)
	}
	if t.spec.repeats >= 0 && firing >= t.spec.repeats {
		return time.Time{}, false
	}
	if t.spec.cron != nil {
		next := t.spec.cron.Next(prev)
		return next, !next.IsZero()
	}
	return t.spec.period.AddTo(prev), true
}

// IsCron reports whether the timer is a cron cycle.
func (t *Timer) IsCron() bool { return t.spec.cron != nil }

// Repeats reports whether the timer can fire more than once.
func (t *Timer) Repeats() bool { return t.Type == TimerCycle && t.spec.repeats != 1 }

// compile checks t: an expression is compiled, a literal parsed.
func (t *Timer) compile() error {
	if t.Expr == "" {
		return t.parse()
	}
	switch t.Type {
	case TimerDuration, TimerDate, TimerCycle:
	default:
		return fmt.Errorf("unknown timer type %q (want duration, date or cycle)", t.Type)
	}
	e, err := expression.Compile(t.Expr)
	if err != nil {
		return fmt.Errorf("timer %s: %w", t.Type, err)
	}
	t.expr = e
	return nil
}

func (t *Timer) parse() error {
	v := strings.TrimSpace(t.Value)
	switch t.Type {
	case TimerDuration:
		p, err := ParsePeriod(v)
		if err != nil {
			return err
		}
		t.spec = timerSpec{period: p}
	case TimerDate:
		at, err := time.Parse(time.RFC3339Nano, v)
		if err != nil {
			return fmt.Errorf("timer date %q is not an ISO-8601 date-time with zone (e.g. 2026-12-01T10:00:00Z)", v)
		}
		t.spec = timerSpec{at: at}
	case TimerCycle:
		s, err := parseCycle(v, t.Quartz)
		if err != nil {
			return err
		}
		t.spec = s
	default:
		return fmt.Errorf("unknown timer type %q (want duration, date or cycle)", t.Type)
	}
	return nil
}

func parseCycle(v string, quartz bool) (timerSpec, error) {
	if !strings.HasPrefix(v, "R") || strings.ContainsAny(v, " \t") {
		d := cron.Spring
		if quartz {
			d = cron.Quartz
		}
		c, err := cron.Parse(v, d)
		if err != nil {
			return timerSpec{}, fmt.Errorf("timer cycle: %w (a cycle is R[n]/duration, R[n]/start/duration or a cron expression)", err)
		}
		return timerSpec{repeats: -1, cron: c}, nil
	}
	parts := strings.Split(v, "/")
	if len(parts) < 2 || len(parts) > 3 {
		return timerSpec{}, fmt.Errorf("timer cycle %q is not R[n]/duration, R[n]/start/duration or a cron expression", v)
	}
	s := timerSpec{repeats: -1}
	if n := parts[0][1:]; n != "" {
		r, err := strconv.Atoi(n)
		if err != nil || r < 1 {
			return timerSpec{}, fmt.Errorf("timer cycle %q: repetitions %q must be a positive integer", v, n)
		}
		s.repeats = r
	}
	if len(parts) == 3 {
		at, err := time.Parse(time.RFC3339Nano, parts[1])
		if err != nil {
			return timerSpec{}, fmt.Errorf("timer cycle %q: start %q is not an ISO-8601 date-time with zone", v, parts[1])
		}
		s.at = at
	}
	p, err := ParsePeriod(parts[len(parts)-1])
	if err != nil {
		return timerSpec{}, err
	}
	if p.IsZero() {
		return timerSpec{}, fmt.Errorf("timer cycle %q has a zero period", v)
	}
	s.period = p
	return s, nil
}

// ParsePeriod parses an ISO-8601 duration: PnYnMnDTnHnMnS or PnW. Seconds
// may have a fraction; negative durations are refused.
func ParsePeriod(s string) (Period, error) {
	bad := func(why string) (Period, error) {
		return Period{}, fmt.Errorf("duration %q is not ISO-8601 (PnYnMnDTnHnMnS): %s", s, why)
	}
	if len(s) < 3 || s[0] != 'P' {
		return bad("must start with P and name at least one unit")
	}
	var p Period
	rest, inTime, units, timeUnits := s[1:], false, 0, 0
	for rest != "" {
		if rest[0] == 'T' {
			if inTime {
				return bad("second T")
			}
			inTime, rest = true, rest[1:]
			continue
		}
		i := 0
		for i < len(rest) && (rest[i] >= '0' && rest[i] <= '9' || rest[i] == '.' || rest[i] == ',') {
			i++
		}
		if i == 0 || i == len(rest) {
			return bad("expected a number followed by a unit")
		}
		num, unit := strings.ReplaceAll(rest[:i], ",", "."), rest[i]
		rest = rest[i+1:]
		units++
		if !inTime && unit != 'S' {
			n, err := strconv.Atoi(num)
			if err != nil {
				return bad("fractions are allowed on seconds only")
			}
			switch unit {
			case 'Y':
				p.Years += n
			case 'M':
				p.Months += n
			case 'W':
				p.Days += 7 * n
			case 'D':
				p.Days += n
			default:
				return bad(fmt.Sprintf("unknown date unit %q", unit))
			}
			continue
		}
		if !inTime {
			return bad("seconds need the T separator")
		}
		f, err := strconv.ParseFloat(num, 64)
		if err != nil {
			return bad(err.Error())
		}
		scale := map[byte]time.Duration{'H': time.Hour, 'M': time.Minute, 'S': time.Second}[unit]
		if scale == 0 {
			return bad(fmt.Sprintf("unknown time unit %q", unit))
		}
		d := f * float64(scale)
		if d >= math.MaxInt64 || float64(p.Clock)+d >= math.MaxInt64 {
			return bad("longer than 292 years")
		}
		p.Clock += time.Duration(d)
		timeUnits++
	}
	if units == 0 {
		return bad("no units")
	}
	if inTime && timeUnits == 0 {
		return bad("T must be followed by hours, minutes or seconds")
	}
	return p, nil
}
