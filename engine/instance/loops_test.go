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
	down   map[string]bool
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
		return map[string]any{"seen": "saw " + city}, nil
	case "after":
		x.after++
		return nil, nil
	}
	return nil, fmt.Errorf("no operation %q", c.Operation)
}

// trip is a multi-instance visit over cities whose outputs are collected
// in visited, followed by one service task: the node after the loop.
func trip(t *testing.T, sequential bool, x *tripExec, cities ...any) (*State, *Env) {
	t.Helper()
	b := model.NewBuilder("trip").StartEvent("s").
		ServiceTask("visit", "visit", model.WithLoop(model.Loop{
			Sequential: sequential, Collection: "cities", ElementVariable: "city",
			OutputCollection: "visited", OutputElement: "seen",
		})).
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
	assertNoVar(t, s.Variables(), "seen", "city", "loopCounter")
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
