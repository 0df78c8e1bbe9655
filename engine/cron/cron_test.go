package cron

import (
	"strings"
	"testing"
	"time"
)

// TestNextSequences checks each expression's next fires from a start,
// against sequences worked out by hand from the Spring CronExpression and
// Quartz CronTrigger documentation (weekdays checked with a calendar).
func TestNextSequences(t *testing.T) {
	for _, tc := range []struct {
		name, expr string
		d          Dialect
		from       string
		want       []string
	}{
		{"spring weekdays at nine", "0 0 9 * * MON-FRI", Spring, "2026-12-04T10:00:00Z", // a Friday
			[]string{"2026-12-07T09:00:00Z", "2026-12-08T09:00:00Z", "2026-12-09T09:00:00Z"}},
		{"quartz every five seconds (loan-granting.bpmn)", "0/5 0/1 * 1/1 * ?", Quartz, "2026-01-01T10:00:03Z",
			[]string{"2026-01-01T10:00:05Z", "2026-01-01T10:00:10Z", "2026-01-01T10:00:15Z"}},
		{"strictly after a fire", "0/5 0/1 * 1/1 * ?", Quartz, "2026-01-01T10:00:55Z",
			[]string{"2026-01-01T10:01:00Z", "2026-01-01T10:01:05Z"}},
		{"quartz last friday", "0 15 10 ? * 6L", Quartz, "2026-01-01T00:00:00Z",
			[]string{"2026-01-30T10:15:00Z", "2026-02-27T10:15:00Z", "2026-03-27T10:15:00Z"}},
		{"spring last friday by name", "0 15 10 ? * FRIL", Spring, "2026-01-01T00:00:00Z",
			[]string{"2026-01-30T10:15:00Z", "2026-02-27T10:15:00Z"}},
		{"quartz third friday", "0 15 10 ? * 6#3", Quartz, "2026-01-01T00:00:00Z",
			[]string{"2026-01-16T10:15:00Z", "2026-02-20T10:15:00Z", "2026-03-20T10:15:00Z"}},
		{"spring third friday", "0 15 10 * * 5#3", Spring, "2026-01-01T00:00:00Z",
			[]string{"2026-01-16T10:15:00Z", "2026-02-20T10:15:00Z"}},
		{"quartz every fifth day from the first", "0 0 12 1/5 * ?", Quartz, "2026-01-01T12:00:00Z",
			[]string{"2026-01-06T12:00:00Z", "2026-01-11T12:00:00Z", "2026-01-16T12:00:00Z", "2026-01-21T12:00:00Z", "2026-01-26T12:00:00Z", "2026-01-31T12:00:00Z", "2026-02-01T12:00:00Z"}},
		{"quartz last day", "0 15 10 L * ?", Quartz, "2026-01-01T00:00:00Z",
			[]string{"2026-01-31T10:15:00Z", "2026-02-28T10:15:00Z", "2026-03-31T10:15:00Z"}},
		{"quartz third to last day", "0 15 10 L-2 * ?", Quartz, "2026-01-01T00:00:00Z",
			[]string{"2026-01-29T10:15:00Z", "2026-02-26T10:15:00Z", "2026-03-29T10:15:00Z"}},
		{"nearest weekday to a sunday the 15th", "0 0 12 15W * ?", Quartz, "2026-02-01T00:00:00Z",
			[]string{"2026-02-16T12:00:00Z", "2026-03-16T12:00:00Z"}}, // Mar 15 2026 is a Sunday too
		{"nearest weekday to a saturday the first stays in the month", "0 0 12 1W 8 ?", Quartz, "2026-07-01T00:00:00Z",
			[]string{"2026-08-03T12:00:00Z"}},
		{"last weekday", "0 0 12 LW 5 ?", Quartz, "2026-01-01T00:00:00Z", // May 31 2026 is a Sunday
			[]string{"2026-05-29T12:00:00Z", "2027-05-31T12:00:00Z"}},
		{"quartz wrapping hours", "0 0 22-2 ? * *", Quartz, "2026-01-01T21:00:00Z",
			[]string{"2026-01-01T22:00:00Z", "2026-01-01T23:00:00Z", "2026-01-02T00:00:00Z", "2026-01-02T01:00:00Z", "2026-01-02T02:00:00Z", "2026-01-02T22:00:00Z"}},
		{"quartz wrapping days of week", "0 0 0 ? * FRI-MON", Quartz, "2026-12-03T00:00:00Z", // a Thursday
			[]string{"2026-12-04T00:00:00Z", "2026-12-05T00:00:00Z", "2026-12-06T00:00:00Z", "2026-12-07T00:00:00Z", "2026-12-11T00:00:00Z"}},
		{"quartz years", "0 0 0 1 1 ? 2027/2", Quartz, "2026-06-01T00:00:00Z",
			[]string{"2027-01-01T00:00:00Z", "2029-01-01T00:00:00Z", "2031-01-01T00:00:00Z"}},
		{"quartz year passed", "0 0 0 1 1 ? 2098-2099", Quartz, "2098-06-01T00:00:00Z",
			[]string{"2099-01-01T00:00:00Z", ""}},
		{"spring friday the 13th: both day fields match", "0 0 0 13 * FRI", Spring, "2026-01-01T00:00:00Z",
			[]string{"2026-02-13T00:00:00Z", "2026-03-13T00:00:00Z", "2026-11-13T00:00:00Z", "2027-08-13T00:00:00Z"}},
		{"spring leap day", "0 0 0 29 2 *", Spring, "2026-01-01T00:00:00Z",
			[]string{"2028-02-29T00:00:00Z", "2032-02-29T00:00:00Z"}},
		{"spring day 1 is monday", "0 0 0 * * 1", Spring, "2026-12-04T00:00:00Z",
			[]string{"2026-12-07T00:00:00Z", "2026-12-14T00:00:00Z"}},
		{"quartz day 1 is sunday", "0 0 0 ? * 1", Quartz, "2026-12-04T00:00:00Z",
			[]string{"2026-12-06T00:00:00Z", "2026-12-13T00:00:00Z"}},
		{"spring sunday as 0", "0 0 0 * * 0", Spring, "2026-12-04T00:00:00Z", []string{"2026-12-06T00:00:00Z"}},
		{"spring sunday as 7", "0 0 0 * * 7", Spring, "2026-12-04T00:00:00Z", []string{"2026-12-06T00:00:00Z"}},
		{"spring star step in the day of week starts monday", "0 0 0 * * */3", Spring, "2026-12-04T00:00:00Z", // MON, THU, SUN
			[]string{"2026-12-06T00:00:00Z", "2026-12-07T00:00:00Z", "2026-12-10T00:00:00Z"}},
		{"spring lists and ranged steps", "0 10-40/15,59 8 * JAN,dec *", Spring, "2026-12-31T08:30:00Z",
			[]string{"2026-12-31T08:40:00Z", "2026-12-31T08:59:00Z", "2027-01-01T08:10:00Z"}},
		{"@daily", "@daily", Spring, "2026-12-04T10:00:00Z", []string{"2026-12-05T00:00:00Z", "2026-12-06T00:00:00Z"}},
		{"@hourly", "@hourly", Spring, "2026-12-04T10:00:00Z", []string{"2026-12-04T11:00:00Z"}},
		{"@weekly is sunday midnight", "@weekly", Spring, "2026-12-04T10:00:00Z", []string{"2026-12-06T00:00:00Z"}},
		{"@monthly", "@MONTHLY", Spring, "2026-12-04T10:00:00Z", []string{"2027-01-01T00:00:00Z"}},
		{"@yearly", "@annually", Spring, "2026-12-04T10:00:00Z", []string{"2027-01-01T00:00:00Z"}},
		{"a zone", "CRON_TZ=America/New_York 0 0 9 * * *", Spring, "2026-12-04T00:00:00Z",
			[]string{"2026-12-04T14:00:00Z", "2026-12-05T14:00:00Z"}},
		// Europe/Berlin: 2026-03-29 02:00 CET becomes 03:00 CEST; 2026-10-25
		// 03:00 CEST becomes 02:00 CET.
		{"a nonexistent wall time does not fire", "CRON_TZ=Europe/Berlin 0 30 2 * * *", Spring, "2026-03-28T02:00:00Z",
			[]string{"2026-03-30T00:30:00Z", "2026-03-31T00:30:00Z"}},
		{"a repeated wall time fires once, at its first occurrence", "TZ=Europe/Berlin 0 30 2 * * *", Spring, "2026-10-24T02:00:00Z",
			[]string{"2026-10-25T00:30:00Z", "2026-10-26T01:30:00Z"}},
		{"hourly across the fall-back", "CRON_TZ=Europe/Berlin 0 0 * * * *", Spring, "2026-10-24T23:30:00Z",
			[]string{"2026-10-25T00:00:00Z", "2026-10-25T02:00:00Z", "2026-10-25T03:00:00Z"}},
		{"hourly across the spring-forward", "CRON_TZ=Europe/Berlin 0 0 * * * ?", Quartz, "2026-03-28T23:30:00Z",
			[]string{"2026-03-29T00:00:00Z", "2026-03-29T01:00:00Z", "2026-03-29T02:00:00Z"}},
		{"armed inside the repeated hour", "CRON_TZ=Europe/Berlin 0 */20 * * * *", Spring, "2026-10-25T01:10:00Z", // 02:10 CET, second pass
			[]string{"2026-10-25T02:00:00Z"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Parse(tc.expr, tc.d)
			if err != nil {
				t.Fatal(err)
			}
			at := mustTime(t, tc.from)
			for i, w := range tc.want {
				next := s.Next(at)
				if w == "" {
					if !next.IsZero() {
						t.Fatalf("fire %d after %s = %s, want none", i, at, next.UTC())
					}
					return
				}
				if want := mustTime(t, w); !next.Equal(want) {
					t.Fatalf("fire %d after %s = %s, want %s", i, at.UTC(), next.UTC(), want)
				}
				if next.Location() != s.Location() {
					t.Fatalf("fire in %s, want the schedule's zone %s", next.Location(), s.Location())
				}
				at = next
			}
		})
	}
}

func TestParseRefuses(t *testing.T) {
	for _, tc := range []struct {
		expr string
		d    Dialect
		want string
	}{
		{"0 9 * * MON", Spring, "has 5 fields, want 6 fields"},
		{"0 0 9 * * MON 2027", Spring, "has 7 fields"},
		{"0 0 9 * * * * *", Quartz, "has 8 fields, want 6 or 7"},
		{"0 0 12 * * *", Quartz, "exactly one of them to be ?"},
		{"0 0 12 ? * ?", Quartz, "exactly one of them to be ?"},
		{"60 0 12 * * *", Spring, `second field "60": 60 is not from 0 to 59`},
		{"0 0 24 * * *", Spring, `hour field "24"`},
		{"0 0 0 0 * *", Spring, `day-of-month field "0"`},
		{"0 0 0 * 13 *", Spring, `month field "13"`},
		{"0 0 0 ? * 8", Quartz, `8 is not from 1 to 7`},
		{"0 0 0 * * 0", Quartz, "exactly one"},
		{"0 0 0 ? * 0", Quartz, `0 is not from 1 to 7`},
		{"0 0 22-2 * * *", Spring, `range "22-2" ends before it starts`},
		{"0 0 0 * * SUN-SAT", Spring, `range "SUN-SAT" ends before it starts`},
		{"*/0 * * * * *", Spring, `step "0"`},
		{"? * * * * *", Spring, "? is for the day of month or week only"},
		{"0 0 0 30 2 *", Spring, "never fires"},
		{"0 0 0 30 2 ? *", Quartz, "never fires"},
		{"0 0 0 1 1 ? 1969", Quartz, "1969 is not from 1970 to 2099"},
		{"0 0 0 * * L", Spring, "L needs a day before it"},
		{"0 0 0 L,3 * *", Spring, "L and W stand alone"},
		{"0 0 0 ? * 6#6", Quartz, "n from 1 to 5"},
		{"0 0 0 32W * ?", Quartz, "nW needs one day"},
		{"0 0 0 * * FOO", Spring, `"FOO" is not a number or name`},
		{"@reboot", Spring, "unknown macro"},
		{"@daily", Quartz, "unknown macro"},
		{"CRON_TZ=Mars/Olympus 0 0 0 * * *", Spring, `unknown time zone "Mars/Olympus"`},
		{"CRON_TZ=Local 0 0 0 * * *", Spring, `unknown time zone "Local"`},
		{"CRON_TZ=UTC", Spring, "nothing after the time zone"},
		{"0 0 0 1 1 ? 2030-2020", Quartz, "ends before it starts"},
		{"", Spring, "has 0 fields"},
	} {
		_, err := Parse(tc.expr, tc.d)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Parse(%q, %s) = %v, want an error containing %q", tc.expr, tc.d, err, tc.want)
		}
	}
}

func TestZeroScheduleNeverFires(t *testing.T) {
	var s Schedule
	if next := s.Next(time.Now()); !next.IsZero() {
		t.Fatalf("zero Schedule fires at %s", next)
	}
}

func mustTime(t *testing.T, s string) time.Time {
	t.Helper()
	at, err := time.Parse(time.RFC3339, s)
	if err != nil {
		t.Fatal(err)
	}
	return at
}

// FuzzParse checks that Parse never panics, and that a parsed schedule's
// fires move strictly forward and match every field.
func FuzzParse(f *testing.F) {
	for _, seed := range []string{"0 0 9 * * MON-FRI", "0/5 0/1 * 1/1 * ?", "0 15 10 ? * 6L", "0 0 12 LW * ?",
		"0 0 0 13 * FRI", "CRON_TZ=Europe/Berlin 0 30 2 * * *", "@weekly", "0 0 22-2 ? * FRI-MON 2030/3", "0 0 12 15W * ?", "0 0 0 L-3 * *", "1-59/7 */13 3,4 ? JAN-MAR 2#5"} {
		f.Add(seed, false)
		f.Add(seed, true)
	}
	from := time.Date(2026, 12, 4, 10, 11, 12, 0, time.UTC)
	f.Fuzz(func(t *testing.T, expr string, quartz bool) {
		d := Spring
		if quartz {
			d = Quartz
		}
		s, err := Parse(expr, d)
		if err != nil {
			return
		}
		at := from
		for range 3 {
			next := s.Next(at)
			if next.IsZero() {
				return
			}
			if !next.After(at) || next.Nanosecond() != 0 {
				t.Fatalf("%q: Next(%s) = %s, not a whole second after it", expr, at, next)
			}
			w := time.Date(next.Year(), next.Month(), next.Day(), next.Hour(), next.Minute(), next.Second(), 0, time.UTC)
			if got, ok := s.nextWall(w, w.Year()); !ok || !got.Equal(w) {
				t.Fatalf("%q: fire %s does not match the fields", expr, next)
			}
			at = next
		}
	})
}
