package instance

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/jetbpm/jetbpm/engine/model"
	"github.com/jetbpm/jetbpm/incidents"
)

// tripExec is the executor of the trip process: "visit" fails for a city
// in down, "after" counts the runs of the node after the loop.
type tripExec struct {
	down map[string]bool
	// odd are the cities whose count n is text, not a number.
	odd    map[string]bool
	visits []string
	after  int
}

func (x *tripExec) Execute(_ context.Context, c Call) (map[string]any, error) {
	switch c.Operation {
	case "visit":
		city, _ := c.Input["city"].(string)
		x.visits = append(x.visits, city)
		if x.down[city] {
			return nil, errors.New("no such city " + city)
		}
		var n any = int64(len(city))
		if x.odd[city] {
			n = "lots"
		}
		return map[string]any{"seen": "saw " + city, "n": n}, nil
	case "after":
		x.after++
		return nil, nil
	}
	return nil, fmt.Errorf("no operation %q", c.Operation)
}

// trip is a multi-instance visit over cities whose outputs are collected
// in visited, followed by one service task: the node after the loop.
func trip(t *testing.T, sequential bool, x *tripExec, cities ...any) (*State, *testEnv) {
	t.Helper()
	return tripWith(t, model.Loop{Sequential: sequential, OutputElement: "seen"}, x, cities...)
}

// tripWith is trip with l's sequential flag, output element and
// completion condition.
func tripWith(t *testing.T, l model.Loop, x *tripExec, cities ...any) (*State, *testEnv) {
	t.Helper()
	l.Collection, l.ElementVariable, l.OutputCollection = "cities", "city", "visited"
	b := model.NewBuilder("trip").StartEvent("s").
		ServiceTask("visit", "visit", model.WithLoop(l)).
		ServiceTask("after", "after").EndEvent("e").Sequence("s", "visit", "after", "e")
	env := newEnv(build(t, b), x)
	return start(t, env, map[string]any{"cities": cities}), env
}

// assertTripDone checks the loop ended once, with visited as want and no
// iteration variable leaked into the process scope.
func assertTripDone(t *testing.T, s *State, x *tripExec, want string) {
	t.Helper()
	assertStatus(t, s, Completed)
	if got := fmt.Sprint(s.Variables()["visited"]); got != want {
		t.Errorf("visited = %s, want %s", got, want)
	}
	if x.after != 1 {
		t.Errorf("the node after the loop ran %d times, want once", x.after)
	}
	assertNoVar(t, s.Variables(), "seen", "n", "city", "loopCounter")
	if len(s.Incidents) != 0 {
		t.Errorf("open incidents %+v", s.Incidents)
	}
}

// lastRecord returns the last record of incident id in the outbox.
func lastRecord(s *State, id string) *incidents.Record {
	var out *incidents.Record
	for _, e := range effects(s, PutIncident) {
		if e.Incident.ID == id {
			out = e.Incident
		}
	}
	return out
}

// Resolving one iteration's incident completes that iteration with the
// operator's variables, set in its scope where its output element reads
// them; the loop goes on and leaves the node once.
func TestResolveMultiInstanceIteration(t *testing.T) {
	for _, sequential := range []bool{true, false} {
		t.Run(fmt.Sprintf("sequential=%v", sequential), func(t *testing.T) {
			x := &tripExec{down: map[string]bool{"Atlantis": true}}
			s, env := trip(t, sequential, x, "Oslo", "Atlantis", "Rome")
			inc := assertIncident(t, s, "visit", "no such city Atlantis")
			wantVisits := []string{"Oslo", "Atlantis", "Rome"}
			if sequential {
				wantVisits = wantVisits[:2] // Rome waits behind the incident
			}
			if !slices.Equal(x.visits, wantVisits) || x.after != 0 {
				t.Fatalf("visits %v, after %d before the resolve", x.visits, x.after)
			}
			flush(s)
			apply(t, s, env, Event{ID: "c1", Kind: IncidentResolve, Incident: inc.ID, Vars: map[string]any{"seen": "skipped"}})
			assertTripDone(t, s, x, "[saw Oslo skipped saw Rome]")
			if !slices.Equal(x.visits, []string{"Oslo", "Atlantis", "Rome"}) {
				t.Errorf("visits %v: the resolved iteration must not run again, the others once", x.visits)
			}
			if rec := lastRecord(s, inc.ID); rec == nil || rec.State != incidents.Resolved {
				t.Errorf("record %+v, want resolved", rec)
			}
		})
	}
}

// Retrying one iteration's incident runs that iteration again, in its own
// scope with its own element; the loop then goes on and leaves once.
func TestRetryMultiInstanceIteration(t *testing.T) {
	for _, sequential := range []bool{true, false} {
		t.Run(fmt.Sprintf("sequential=%v", sequential), func(t *testing.T) {
			x := &tripExec{down: map[string]bool{"Atlantis": true}}
			s, env := trip(t, sequential, x, "Oslo", "Atlantis", "Rome")
			inc := assertIncident(t, s, "visit")

			// A retry that fails again keeps the iteration blocked.
			apply(t, s, env, command(IncidentRetry, inc, "c1"))
			inc = assertIncident(t, s, "visit", "no such city Atlantis")
			if inc.Attempts != 2 || x.after != 0 {
				t.Fatalf("attempts %d, after %d after a failed retry", inc.Attempts, x.after)
			}

			x.down["Atlantis"] = false
			flush(s)
			apply(t, s, env, command(IncidentRetry, inc, "c2"))
			assertTripDone(t, s, x, "[saw Oslo saw Atlantis saw Rome]")
			want := []string{"Oslo", "Atlantis", "Atlantis", "Atlantis", "Rome"}
			if !sequential {
				want = []string{"Oslo", "Atlantis", "Rome", "Atlantis", "Atlantis"}
			}
			if !slices.Equal(x.visits, want) {
				t.Errorf("visits %v, want %v: only the failed iteration runs again", x.visits, want)
			}
			if rec := lastRecord(s, inc.ID); rec == nil || rec.State != incidents.Resolved {
				t.Errorf("record %+v, want resolved by the successful retry", rec)
			}
		})
	}
}

// iterationIncident asserts the open incident at visit is an iteration's.
func iterationIncident(t *testing.T, s *State, fragments ...string) *Incident {
	t.Helper()
	inc := assertIncident(t, s, "visit", fragments...)
	if tr := s.track(inc.Track); !tr.Inner {
		t.Fatalf("incident %s is on track %+v, want an iteration's", inc.ID, tr)
	}
	return inc
}

// A completion condition that fails over a finished iteration's variables
// is that iteration's incident: the loop cannot complete past it, and a
// resolve or a retry finishes that iteration again.
func TestCompletionConditionFailureIsTheIterations(t *testing.T) {
	for _, sequential := range []bool{true, false} {
		for _, action := range []EventKind{IncidentResolve, IncidentRetry} {
			t.Run(fmt.Sprintf("sequential=%v/%s", sequential, action), func(t *testing.T) {
				x := &tripExec{odd: map[string]bool{"Atlantis": true}}
				s, env := tripWith(t, model.Loop{Sequential: sequential, OutputElement: "seen", CompletionCondition: "n > 100"},
					x, "Oslo", "Atlantis", "Rome")
				inc := iterationIncident(t, s, "completion condition", "n > 100")
				if x.after != 0 || s.Variables()["visited"] != nil {
					t.Fatalf("the loop completed past its incident: after %d, vars %v", x.after, s.Variables())
				}
				flush(s)
				ev := command(action, inc, "c1")
				if action == IncidentResolve {
					ev.Vars = map[string]any{"n": 0}
				} else {
					x.odd["Atlantis"] = false
				}
				apply(t, s, env, ev)
				assertTripDone(t, s, x, "[saw Oslo saw Atlantis saw Rome]")
				if rec := lastRecord(s, inc.ID); rec == nil || rec.State != incidents.Resolved {
					t.Errorf("record %+v, want resolved", rec)
				}
			})
		}
	}
}

// A resolve whose variables fail the iteration's output element raises a
// new incident under a new id; the resolved one stays resolved.
func TestResolveThatFailsAgainRaisesANewIncident(t *testing.T) {
	x := &tripExec{down: map[string]bool{"Atlantis": true}}
	s, env := tripWith(t, model.Loop{OutputElement: "n * 2"}, x, "Oslo", "Atlantis", "Rome")
	first := iterationIncident(t, s, "no such city")
	flush(s)
	apply(t, s, env, Event{ID: "c1", Kind: IncidentResolve, Incident: first.ID, Vars: map[string]any{"n": "many"}})
	second := iterationIncident(t, s, "output element")
	if second.ID == first.ID {
		t.Fatalf("the failed resolve reopened %s", first.ID)
	}
	if rec := lastRecord(s, first.ID); rec == nil || rec.State != incidents.Resolved {
		t.Fatalf("record of %s = %+v, want resolved", first.ID, rec)
	}
	apply(t, s, env, Event{ID: "c2", Kind: IncidentResolve, Incident: second.ID, Vars: map[string]any{"n": 5}})
	assertTripDone(t, s, x, "[8 10 8]")
}

// After an abandoned iteration the completion condition sees no iteration
// variables; when it fails there, the incident is the body's: the loop
// waits, a retry evaluates the condition again (never re-running an
// iteration), and a resolve completes the activity.
func TestCompletionConditionFailureAfterAbandon(t *testing.T) {
	for _, sequential := range []bool{true, false} {
		t.Run(fmt.Sprintf("sequential=%v", sequential), func(t *testing.T) {
			x := &tripExec{down: map[string]bool{"Atlantis": true}}
			s, env := tripWith(t, model.Loop{Sequential: sequential, OutputElement: "seen", CompletionCondition: "n > 100"},
				x, "Oslo", "Atlantis", "Rome")
			inc := iterationIncident(t, s, "no such city")
			apply(t, s, env, command(IncidentAbandon, inc, "c1"))
			body := assertIncident(t, s, "visit", "completion condition")
			if tr := s.track(body.Track); tr.Inner || tr.Loop == nil {
				t.Fatalf("incident on %+v, want the loop's body", tr)
			}
			visits := slices.Clone(x.visits)

			apply(t, s, env, command(IncidentRetry, body, "c2"))
			body = assertIncident(t, s, "visit", "completion condition")
			if body.Attempts != 2 || x.after != 0 || !slices.Equal(x.visits, visits) {
				t.Fatalf("after a retry: attempts %d, after %d, visits %v (were %v)", body.Attempts, x.after, x.visits, visits)
			}

			flush(s)
			apply(t, s, env, Event{ID: "c3", Kind: IncidentResolve, Incident: body.ID, Vars: map[string]any{"checked": true}})
			want := "[saw Oslo <nil> saw Rome]"
			if sequential {
				want = "[saw Oslo <nil> <nil>]" // Rome never started: the activity was completed
			}
			assertStatus(t, s, Completed)
			if got := fmt.Sprint(s.Variables()["visited"]); got != want || x.after != 1 || s.Variables()["checked"] != true {
				t.Fatalf("visited %s (want %s), after %d, vars %v", got, want, x.after, s.Variables())
			}
			if rec := lastRecord(s, body.ID); rec == nil || rec.State != incidents.Resolved {
				t.Errorf("record %+v, want resolved", rec)
			}
		})
	}
}

// A literal cardinality evaluates to a Go int, which counts as well as a
// variable's int64.
func TestLoopLiteralCardinality(t *testing.T) {
	s, _ := run(t, model.NewBuilder("lit").StartEvent("s").
		ScriptTask("twice", "loopCounter", "c", model.WithLoop(model.Loop{Cardinality: "2", OutputCollection: "cs", OutputElement: "c"})).
		EndEvent("e").Sequence("s", "twice", "e"), nil)
	assertStatus(t, s, Completed)
	assertVars(t, s.Variables(), map[string]any{"cs": []any{int64(1), int64(2)}})
}
