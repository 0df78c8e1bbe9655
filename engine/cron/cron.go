// Package cron parses the cron expressions of BPMN timer cycles and
// computes their fire times. It knows two dialects, chosen by the BPMN
// file's dialect rather than guessed from the text, because the same text
// means different days in each (day-of-week 1 is Monday in Spring and
// Sunday in Quartz):
//
//   - Spring: the 6-field expression Zeebe takes
//     (`second minute hour day-of-month month day-of-week`, e.g.
//     `0 0 9 * * MON-FRI`), with Spring's CronExpression syntax: `*`, `?`,
//     lists, ranges, steps (`*/15`, `0/5`, `10-40/10`), month and day
//     names, day-of-week 0 or 7 for Sunday, `L`, `L-n`, `nW`, `LW` in the
//     day of month, `dL` and `d#n` in the day of week, and the macros
//     @yearly (@annually), @monthly, @weekly, @daily (@midnight), @hourly.
//     Day of month and day of week must both match.
//   - Quartz: Camunda 7's 6- or 7-field expression
//     (`second minute hour day-of-month month day-of-week [year]`), where
//     exactly one of day of month and day of week is `?`, day-of-week 1 is
//     Sunday, `L` alone in the day of week is Saturday, ranges may wrap
//     (`FRI-MON`, `22-2`) and the year field takes 1970-2099.
//
// # Time zones and daylight saving
//
// An expression is read in UTC unless it starts with `CRON_TZ=<IANA zone>`
// (or `TZ=<zone>`), e.g. `CRON_TZ=Europe/Berlin 0 0 9 * * MON-FRI`. The
// fields name wall-clock times of that zone. A wall-clock time that does
// not exist (skipped when clocks go forward) does not fire; one that
// happens twice (when clocks go back) fires once, at its first
// occurrence. So `0 30 2 * * *` in Europe/Berlin does not fire on the
// last Sunday of March and fires once on the last Sunday of October.
package cron

import (
	"errors"
	"fmt"
	"strings"
	"time"
	_ "time/tzdata" // zones do not depend on the host's zoneinfo
)

// Dialect says how an expression is read.
type Dialect int

// The dialects: Spring is the zero value (Zeebe's cron).
const (
	Spring Dialect = iota // Zeebe: Spring's CronExpression, 6 fields
	Quartz                // Camunda 7: Quartz CronTrigger, 6 or 7 fields
)

func (d Dialect) String() string {
	if d == Quartz {
		return "Quartz"
	}
	return "Spring"
}

// Schedule is a parsed cron expression. Its zero value never fires.
type Schedule struct {
	expr     string
	loc      *time.Location
	sec, min uint64 // bit n: second / minute n
	hour     uint64 // bit n: hour n
	dom      uint64 // bit n: day of month n (1-31)
	month    uint64 // bit n: month n (1-12)
	dow      uint64 // bit n: weekday n (0 = Sunday)
	years    [3]uint64
	anyYear  bool
	domRule  domRule
	dowRule  dowRule
}

// domRule is a day-of-month form that is not a set of days.
type domRule struct {
	kind   byte // 0 set, 'L' last (minus offset), 'W' nearest weekday to day, 'V' last weekday
	offset int  // L-offset
	day    int  // dayW
}

// dowRule is a day-of-week form that is not a set of weekdays.
type dowRule struct {
	kind    byte // 0 set, 'L' last such weekday of the month, '#' nth such weekday
	weekday time.Weekday
	nth     int
}

const (
	firstYear = 1970
	lastYear  = 2099 // Quartz's year field
	// searchYears bounds the search for a fire: the Gregorian calendar
	// repeats every 400 years, so an expression that does not fire within
	// them never does.
	searchYears = 401
)

// Parse parses expr in dialect d. The error names the field and what is
// wrong with it. An expression that can never fire (`0 0 0 30 2 *`) is
// refused.
func Parse(expr string, d Dialect) (*Schedule, error) {
	s, err := parse(expr, d)
	if err != nil {
		return nil, fmt.Errorf("cron expression %q (%s): %w", expr, d, err)
	}
	if s.Next(time.Date(firstYear, 1, 1, 0, 0, 0, 0, time.UTC)).IsZero() {
		return nil, fmt.Errorf("cron expression %q (%s) never fires", expr, d)
	}
	return s, nil
}

var springMacros = map[string]string{
	"@yearly":   "0 0 0 1 1 *",
	"@annually": "0 0 0 1 1 *",
	"@monthly":  "0 0 0 1 * *",
	"@weekly":   "0 0 0 * * 0",
	"@daily":    "0 0 0 * * *",
	"@midnight": "0 0 0 * * *",
	"@hourly":   "0 0 * * * *",
}

func parse(expr string, d Dialect) (*Schedule, error) {
	s := &Schedule{expr: expr, loc: time.UTC, anyYear: true}
	text := strings.TrimSpace(expr)
	if zone, ok := zonePrefix(text); ok {
		i := strings.IndexAny(text, " \t")
		if i < 0 {
			return nil, errors.New("nothing after the time zone")
		}
		loc, err := time.LoadLocation(zone)
		if err != nil || zone == "" || zone == "Local" {
			return nil, fmt.Errorf("unknown time zone %q", zone)
		}
		s.loc, text = loc, strings.TrimSpace(text[i:])
	}
	if strings.HasPrefix(text, "@") {
		m, ok := springMacros[strings.ToLower(text)]
		if !ok || d != Spring {
			return nil, fmt.Errorf("unknown macro %q (Spring knows @yearly, @annually, @monthly, @weekly, @daily, @midnight, @hourly; Quartz none)", text)
		}
		text = m
	}
	f := strings.Fields(strings.ToUpper(text))
	want := "6 fields (second minute hour day-of-month month day-of-week)"
	if d == Quartz {
		want = "6 or 7 fields (second minute hour day-of-month month day-of-week [year])"
	}
	if len(f) != 6 && (d != Quartz || len(f) != 7) {
		return nil, fmt.Errorf("has %d fields, want %s", len(f), want)
	}
	for i, name := range []string{"second", "minute", "hour", "", "month"} {
		if name != "" && strings.Contains(f[i], "?") {
			return nil, fmt.Errorf("%s field %q: ? is for the day of month or week only", name, f[i])
		}
	}
	var err error
	if s.sec, err = bits(f[0], "second", 0, 59, nil, d); err != nil {
		return nil, err
	}
	if s.min, err = bits(f[1], "minute", 0, 59, nil, d); err != nil {
		return nil, err
	}
	if s.hour, err = bits(f[2], "hour", 0, 23, nil, d); err != nil {
		return nil, err
	}
	if s.month, err = bits(f[4], "month", 1, 12, monthNames, d); err != nil {
		return nil, err
	}
	if err = s.days(f[3], f[5], d); err != nil {
		return nil, err
	}
	if len(f) == 7 {
		if err = s.yearField(f[6]); err != nil {
			return nil, err
		}
	}
	return s, nil
}

func zonePrefix(text string) (string, bool) {
	for _, p := range []string{"CRON_TZ=", "TZ="} {
		if strings.HasPrefix(text, p) {
			zone, _, _ := strings.Cut(text[len(p):], " ")
			zone, _, _ = strings.Cut(zone, "\t")
			return zone, true
		}
	}
	return "", false
}

// String returns the expression as written.
func (s *Schedule) String() string { return s.expr }

// Location returns the zone the expression's fields are read in.
func (s *Schedule) Location() *time.Location {
	if s.loc == nil {
		return time.UTC
	}
	return s.loc
}

// Next returns the first fire strictly after t, to the second, in the
// schedule's zone; the zero time if there is none (a Quartz year field
// that has passed, or the zero Schedule).
func (s *Schedule) Next(t time.Time) time.Time {
	if s == nil || s.loc == nil {
		return time.Time{}
	}
	a := t.In(s.loc)
	// Search wall-clock times, kept as UTC times so that no zone
	// transition moves them, and map each match back to the zone.
	w := time.Date(a.Year(), a.Month(), a.Day(), a.Hour(), a.Minute(), a.Second(), 0, time.UTC).Add(time.Second)
	limit := min(a.Year()+searchYears, lastYear)
	if s.anyYear {
		limit = a.Year() + searchYears
	}
	for {
		var ok bool
		if w, ok = s.nextWall(w, limit); !ok {
			return time.Time{}
		}
		if at, ok := resolve(w, s.loc); ok && at.After(t) {
			return at
		}
		w = w.Add(time.Second) // nonexistent, or its first occurrence is past
	}
}

// nextWall returns the first wall-clock time from w on (w in UTC) that
// matches every field, or false if there is none up to year limit.
func (s *Schedule) nextWall(w time.Time, limit int) (time.Time, bool) {
	for w.Year() <= limit {
		y, m, d := w.Date()
		h, mi, sec := w.Clock()
		switch {
		case !s.yearOK(y):
			w = time.Date(y+1, 1, 1, 0, 0, 0, 0, time.UTC)
		case s.month&(1<<uint(m)) == 0:
			w = time.Date(y, m+1, 1, 0, 0, 0, 0, time.UTC)
		case !s.dayOK(y, m, d):
			w = time.Date(y, m, d+1, 0, 0, 0, 0, time.UTC)
		case s.hour&(1<<uint(h)) == 0:
			w = time.Date(y, m, d, h+1, 0, 0, 0, time.UTC)
		case s.min&(1<<uint(mi)) == 0:
			w = time.Date(y, m, d, h, mi+1, 0, 0, time.UTC)
		case s.sec&(1<<uint(sec)) == 0:
			w = w.Add(time.Second)
		default:
			return w, true
		}
	}
	return time.Time{}, false
}

// resolve returns the instant at which wall-clock time w (given in UTC)
// happens in loc: the earlier one if it happens twice, false if never.
func resolve(w time.Time, loc *time.Location) (time.Time, bool) {
	u := w.Unix()
	var best time.Time
	seen := map[int]bool{}
	for _, probe := range []int64{u - 86400, u, u + 86400} {
		_, off := time.Unix(probe, 0).In(loc).Zone()
		if seen[off] {
			continue
		}
		seen[off] = true
		at := time.Unix(u-int64(off), 0).In(loc)
		if wallEqual(at, w) && (best.IsZero() || at.Before(best)) {
			best = at
		}
	}
	return best, !best.IsZero()
}

func wallEqual(at, w time.Time) bool {
	y1, m1, d1 := at.Date()
	y2, m2, d2 := w.Date()
	h1, mi1, s1 := at.Clock()
	h2, mi2, s2 := w.Clock()
	return y1 == y2 && m1 == m2 && d1 == d2 && h1 == h2 && mi1 == mi2 && s1 == s2
}

func (s *Schedule) yearOK(y int) bool {
	if s.anyYear {
		return true
	}
	if y < firstYear || y > lastYear {
		return false
	}
	i := y - firstYear
	return s.years[i/64]&(1<<uint(i%64)) != 0
}

// dayOK reports whether day d of month m matches both day fields.
func (s *Schedule) dayOK(y int, m time.Month, d int) bool {
	last := time.Date(y, m+1, 0, 0, 0, 0, 0, time.UTC).Day()
	wd := time.Date(y, m, d, 0, 0, 0, 0, time.UTC).Weekday()
	var domOK bool
	switch s.domRule.kind {
	case 'L':
		domOK = d == last-s.domRule.offset
	case 'V':
		domOK = d == nearestWeekday(y, m, last, last)
	case 'W':
		domOK = s.domRule.day <= last && d == nearestWeekday(y, m, s.domRule.day, last)
	default:
		domOK = s.dom&(1<<uint(d)) != 0
	}
	if !domOK {
		return false
	}
	switch s.dowRule.kind {
	case 'L':
		return wd == s.dowRule.weekday && d+7 > last
	case '#':
		return wd == s.dowRule.weekday && (d-1)/7+1 == s.dowRule.nth
	default:
		return s.dow&(1<<uint(wd)) != 0
	}
}

// nearestWeekday returns the weekday (Monday to Friday) nearest to day
// of the month, not leaving the month.
func nearestWeekday(y int, m time.Month, day, last int) int {
	switch time.Date(y, m, day, 0, 0, 0, 0, time.UTC).Weekday() {
	case time.Saturday:
		if day == 1 {
			return 3
		}
		return day - 1
	case time.Sunday:
		if day == last {
			return day - 2
		}
		return day + 1
	}
	return day
}
