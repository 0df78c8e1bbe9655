package cron

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

var monthNames = map[string]int{
	"JAN": 1, "FEB": 2, "MAR": 3, "APR": 4, "MAY": 5, "JUN": 6,
	"JUL": 7, "AUG": 8, "SEP": 9, "OCT": 10, "NOV": 11, "DEC": 12,
}

// Day names: Spring counts Monday 1 to Sunday 7 (0 is Sunday too),
// Quartz Sunday 1 to Saturday 7.
var (
	springDays = map[string]int{"MON": 1, "TUE": 2, "WED": 3, "THU": 4, "FRI": 5, "SAT": 6, "SUN": 7}
	quartzDays = map[string]int{"SUN": 1, "MON": 2, "TUE": 3, "WED": 4, "THU": 5, "FRI": 6, "SAT": 7}
)

// bits parses a list field whose values run from lo to hi: each item is
// `*`, a value, a range `a-b`, optionally stepped (`*/n`, `a/n` = a to
// hi by n, `a-b/n`). Quartz ranges may wrap past hi (`22-2`).
func bits(field, name string, lo, hi int, names map[string]int, d Dialect) (uint64, error) {
	return bitsStar(field, name, lo, hi, lo, names, d)
}

// bitsStar is bits where `*` starts at starLo rather than lo (Spring's
// day of week accepts 0 for Sunday but `*` runs Monday to Sunday, 1-7).
func bitsStar(field, name string, lo, hi, starLo int, names map[string]int, d Dialect) (uint64, error) {
	var out uint64
	for item := range strings.SplitSeq(field, ",") {
		b, err := itemBits(item, lo, hi, starLo, names, d)
		if err != nil {
			return 0, fmt.Errorf("%s field %q: %w", name, field, err)
		}
		out |= b
	}
	return out, nil
}

func itemBits(item string, lo, hi, starLo int, names map[string]int, d Dialect) (uint64, error) {
	base, stepText, stepped := strings.Cut(item, "/")
	step := 1
	if stepped {
		n, err := strconv.Atoi(stepText)
		if err != nil || n < 1 || n > hi-lo+1 {
			return 0, fmt.Errorf("step %q is not a number from 1 to %d", stepText, hi-lo+1)
		}
		step = n
	}
	var from, to int
	switch {
	case base == "*" || base == "?":
		from, to = starLo, hi
	case base == "":
		return 0, errors.New("empty item")
	default:
		a, b, isRange := strings.Cut(base, "-")
		var err error
		if from, err = value(a, lo, hi, names); err != nil {
			return 0, err
		}
		to = from
		if stepped {
			to = hi
		}
		if isRange {
			if to, err = value(b, lo, hi, names); err != nil {
				return 0, err
			}
		}
		if to < from {
			if d != Quartz {
				return 0, fmt.Errorf("range %q ends before it starts", base)
			}
			to += hi - lo + 1 // Quartz wraps: 22-2 is 22, 23, 0, 1, 2
		}
	}
	var out uint64
	for v := from; v <= to; v += step {
		out |= 1 << uint(lo+(v-lo)%(hi-lo+1))
	}
	return out, nil
}

func value(text string, lo, hi int, names map[string]int) (int, error) {
	if v, ok := names[text]; ok {
		return v, nil
	}
	v, err := strconv.Atoi(text)
	if err != nil {
		return 0, fmt.Errorf("%q is not a number or name", text)
	}
	if v < lo || v > hi {
		return 0, fmt.Errorf("%d is not from %d to %d", v, lo, hi)
	}
	return v, nil
}

// days parses the day-of-month and day-of-week fields.
func (s *Schedule) days(dom, dow string, d Dialect) error {
	if d == Quartz && (dom == "?") == (dow == "?") {
		return fmt.Errorf("day-of-month %q and day-of-week %q: Quartz wants exactly one of them to be ?", dom, dow)
	}
	if err := s.domField(dom, d); err != nil {
		return err
	}
	return s.dowField(dow, d)
}

func (s *Schedule) domField(field string, d Dialect) error {
	bad := func(why string) error { return fmt.Errorf("day-of-month field %q: %s", field, why) }
	switch {
	case field == "L":
		s.domRule = domRule{kind: 'L'}
	case field == "LW":
		s.domRule = domRule{kind: 'V'}
	case strings.HasPrefix(field, "L-"):
		n, err := strconv.Atoi(field[2:])
		if err != nil || n < 0 || n > 30 {
			return bad("the offset of L-n must be from 0 to 30")
		}
		s.domRule = domRule{kind: 'L', offset: n}
	case strings.HasSuffix(field, "W"):
		n, err := strconv.Atoi(field[:len(field)-1])
		if err != nil || n < 1 || n > 31 {
			return bad("nW needs one day from 1 to 31")
		}
		s.domRule = domRule{kind: 'W', day: n}
	case strings.ContainsAny(field, "LW#"):
		return bad("L and W stand alone (L, L-n, nW, LW); # belongs to the day of week")
	default:
		b, err := bits(field, "day-of-month", 1, 31, nil, d)
		if err != nil {
			return err
		}
		s.dom = b
	}
	return nil
}

func (s *Schedule) dowField(field string, d Dialect) error {
	bad := func(why string) error { return fmt.Errorf("day-of-week field %q: %s", field, why) }
	names, lo, hi, starLo := springDays, 0, 7, 1
	if d == Quartz {
		names, lo, starLo = quartzDays, 1, 1
	}
	weekday := func(text string) (time.Weekday, error) {
		v, err := value(text, lo, hi, names)
		if err != nil {
			return 0, bad(err.Error())
		}
		return toWeekday(v, d), nil
	}
	switch {
	case field == "L" && d == Quartz:
		s.dow = 1 << uint(time.Saturday)
	case strings.HasSuffix(field, "L"):
		if len(field) == 1 {
			return bad("L needs a day before it (5L, FRIL: the last Friday of the month)")
		}
		wd, err := weekday(field[:len(field)-1])
		if err != nil {
			return err
		}
		s.dowRule = dowRule{kind: 'L', weekday: wd}
	case strings.Contains(field, "#"):
		day, nth, _ := strings.Cut(field, "#")
		wd, err := weekday(day)
		if err != nil {
			return err
		}
		n, err := strconv.Atoi(nth)
		if err != nil || n < 1 || n > 5 {
			return bad("d#n needs n from 1 to 5")
		}
		s.dowRule = dowRule{kind: '#', weekday: wd, nth: n}
	case strings.ContainsAny(field, "LW"):
		return bad("L stands alone or after one day (5L); W belongs to the day of month")
	default:
		b, err := bitsStar(field, "day-of-week", lo, hi, starLo, names, d)
		if err != nil {
			return err
		}
		for v := lo; v <= hi; v++ {
			if b&(1<<uint(v)) != 0 {
				s.dow |= 1 << uint(toWeekday(v, d))
			}
		}
	}
	return nil
}

// toWeekday maps a day-of-week value of dialect d to a time.Weekday.
func toWeekday(v int, d Dialect) time.Weekday {
	if d == Quartz {
		return time.Weekday(v - 1)
	}
	return time.Weekday(v % 7)
}

func (s *Schedule) yearField(field string) error {
	s.anyYear = field == "*" || field == "?"
	if s.anyYear {
		return nil
	}
	for item := range strings.SplitSeq(field, ",") {
		base, stepText, stepped := strings.Cut(item, "/")
		step := 1
		if stepped {
			n, err := strconv.Atoi(stepText)
			if err != nil || n < 1 {
				return fmt.Errorf("year field %q: step %q is not a positive number", field, stepText)
			}
			step = n
		}
		from, to := firstYear, lastYear
		if base != "*" {
			a, b, isRange := strings.Cut(base, "-")
			var err error
			if from, err = value(a, firstYear, lastYear, nil); err != nil {
				return fmt.Errorf("year field %q: %w", field, err)
			}
			if !stepped {
				to = from
			}
			if isRange {
				if to, err = value(b, firstYear, lastYear, nil); err != nil {
					return fmt.Errorf("year field %q: %w", field, err)
				}
				if to < from {
					return fmt.Errorf("year field %q: range %q ends before it starts", field, base)
				}
			}
		}
		for y := from; y <= to; y += step {
			i := y - firstYear
			s.years[i/64] |= 1 << uint(i%64)
		}
	}
	return nil
}
