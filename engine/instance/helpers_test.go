package instance

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jetbpm/jetbpm/engine/model"
)

// t0 is the fake clock's starting point. Tests advance time by passing a
// later Env.Now; nothing reads the wall clock except operations' contexts.
var t0 = time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)

// build validates a process built with model.Builder and "deploys" it as v1.
func build(t testing.TB, b *model.Builder) *model.Process {
	t.Helper()
	p, err := b.Build()
	if err != nil {
		t.Fatalf("build: %v", err)
	}
	p.Version = 1
	return p
}

// opFunc is an in-process operation of the fake executor.
type opFunc func(ctx context.Context, c Call) (map[string]any, error)

// fakeExec maps operation names to functions and records every call.
type fakeExec struct {
	ops   map[string]opFunc
	calls []Call
}

func newExec(ops map[string]opFunc) *fakeExec { return &fakeExec{ops: ops} }

func (f *fakeExec) Execute(ctx context.Context, c Call) (map[string]any, error) {
	f.calls = append(f.calls, c)
	op, ok := f.ops[c.Operation]
	if !ok {
		return nil, fmt.Errorf("fake executor: no operation %q", c.Operation)
	}
	return op(ctx, c)
}

// returns is an operation that returns fixed results.
func returns(out map[string]any) opFunc {
	return func(context.Context, Call) (map[string]any, error) { return out, nil }
}

// testEnv is the environment of a step plus the part of the engine the
// tests play: with an executor, start and apply run every operation a step
// asks for (RunOperation) and apply its result, as the engine does after
// the checkpoint, until no operation is left to run.
type testEnv struct {
	Env
	exec Executor
	ran  map[string]bool // RunOperation effects run, by state and effect id
}

// newEnv is the environment of a step at t0; exec may be nil (operations
// then stay parked).
func newEnv(p *model.Process, exec Executor) *testEnv {
	return &testEnv{Env: Env{Process: p, Now: t0}, exec: exec, ran: map[string]bool{}}
}

// runOps runs the operations s asks for, one at a time in outbox order,
// each with a deadline of its Due on the step's clock, and applies their
// results.
func (env *testEnv) runOps(t testing.TB, s *State) {
	t.Helper()
	if env.exec == nil {
		return
	}
	for {
		var next *Effect
		for i := range s.Outbox {
			e := &s.Outbox[i]
			if key := fmt.Sprintf("%p/%s", s, e.ID); e.Kind == RunOperation && !env.ran[key] {
				env.ran[key], next = true, e
				break
			}
		}
		if next == nil {
			return
		}
		ctx, cancel := context.Background(), context.CancelFunc(func() {})
		if !next.Due.IsZero() {
			ctx, cancel = context.WithTimeout(ctx, next.Due.Sub(env.Now))
		}
		res := Invoke(ctx, env.exec, *next.Call)
		cancel()
		if _, err := Apply(s, env.Env, OperationEvent(next.Wait, res)); err != nil {
			t.Fatalf("Apply(result of %s): %v", next.Wait, err)
		}
	}
}

// start starts instance "i1" and fails the test on an error.
func start(t testing.TB, env *testEnv, vars map[string]any) *State {
	t.Helper()
	s, err := Start("i1", env.Env, vars)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	env.runOps(t, s)
	return s
}

// run builds p and starts it with vars and no executor.
func run(t testing.TB, b *model.Builder, vars map[string]any) (*State, *testEnv) {
	t.Helper()
	env := newEnv(build(t, b), nil)
	return start(t, env, vars), env
}

// apply applies events and fails the test on an error; it returns how
// many of evs were applied.
func apply(t testing.TB, s *State, env *testEnv, evs ...Event) int {
	t.Helper()
	n, err := Apply(s, env.Env, evs...)
	if err != nil {
		t.Fatalf("Apply: %v", err)
	}
	env.runOps(t, s)
	return n
}

// timerEvent is the event the engine publishes when wait w fires.
func timerEvent(w *Wait) Event {
	return Event{ID: fmt.Sprintf("ev:%s:%d", w.ID, w.Firing), Kind: TimerFired, Wait: w.ID, Firing: w.Firing}
}

// fire advances the clock to the due time of the wait at node and applies
// its TimerFired event, expecting it to be applied.
func fire(t testing.TB, s *State, env *testEnv, node string) *Wait {
	t.Helper()
	w := waitAt(t, s, node)
	w0 := *w
	env.Now = w.Due
	if n := apply(t, s, env, timerEvent(&w0)); n != 1 {
		t.Fatalf("TimerFired(%s) applied = %d, want 1", w0.ID, n)
	}
	return &w0
}

// waitAt returns the only wait owned by node.
func waitAt(t testing.TB, s *State, node string) *Wait {
	t.Helper()
	var found []*Wait
	for _, w := range s.Waits {
		if w.Node == node {
			found = append(found, w)
		}
	}
	if len(found) != 1 {
		t.Fatalf("waits at %s: %d, want 1 (waits: %s)", node, len(found), dumpWaits(s))
	}
	return found[0]
}

func dumpWaits(s *State) string {
	var parts []string
	for _, w := range s.Waits {
		parts = append(parts, fmt.Sprintf("%s(%s #%d due %s)", w.ID, w.Kind, w.Firing, w.Due.Format(time.TimeOnly)))
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// effects returns the outbox entries of one kind.
func effects(s *State, kind EffectKind) []Effect {
	var out []Effect
	for _, e := range s.Outbox {
		if e.Kind == kind {
			out = append(out, e)
		}
	}
	return out
}

// effectWaits returns the wait ids of the outbox entries of one kind.
func effectWaits(s *State, kind EffectKind) []string {
	var out []string
	for _, e := range effects(s, kind) {
		out = append(out, e.Wait)
	}
	slices.Sort(out)
	return out
}

// factKinds returns the kinds of the facts in the outbox, in order.
func factKinds(s *State) []FactKind {
	var out []FactKind
	for _, e := range effects(s, PublishFact) {
		out = append(out, e.Fact.Kind)
	}
	return out
}

// flush models the engine publishing the outbox after the checkpoint.
func flush(s *State) { s.Outbox = nil }

func assertStatus(t testing.TB, s *State, want Status) {
	t.Helper()
	if s.Status != want {
		t.Fatalf("status = %s, want %s (failure: %+v, active: %v, waits: %s)", s.Status, want, s.Failure, s.ActiveNodes(), dumpWaits(s))
	}
}

// assertFailed checks the instance failed at node with a message containing
// every fragment.
func assertFailed(t testing.TB, s *State, node string, fragments ...string) {
	t.Helper()
	assertStatus(t, s, Failed)
	if s.Failure == nil {
		t.Fatal("failed without a Failure")
	}
	if s.Failure.Node != node {
		t.Errorf("Failure.Node = %q, want %q (message %q)", s.Failure.Node, node, s.Failure.Message)
	}
	for _, f := range fragments {
		if !strings.Contains(s.Failure.Message, f) {
			t.Errorf("Failure.Message = %q, want it to contain %q", s.Failure.Message, f)
		}
	}
	if len(s.Tracks) != 0 || len(s.Waits) != 0 {
		t.Errorf("failed instance keeps tracks %v / waits %s", s.ActiveNodes(), dumpWaits(s))
	}
	facts := effects(s, PublishFact)
	if last := facts[len(facts)-1].Fact; last.Kind != FactFailed || last.Error != s.Failure.Message {
		t.Errorf("last fact = %+v, want failed with the failure message", last)
	}
}

func assertVars(t testing.TB, got map[string]any, want map[string]any) {
	t.Helper()
	for k, v := range want {
		g, ok := got[k]
		if !ok {
			t.Errorf("variable %q missing (vars %v)", k, got)
			continue
		}
		if fmt.Sprintf("%T %v", g, g) != fmt.Sprintf("%T %v", v, v) {
			t.Errorf("variable %q = %T %v, want %T %v", k, g, g, v, v)
		}
	}
}

func assertNoVar(t testing.TB, vars map[string]any, names ...string) {
	t.Helper()
	for _, n := range names {
		if v, ok := vars[n]; ok {
			t.Errorf("variable %q = %v, want it absent", n, v)
		}
	}
}

// scopeOf returns the non-root scope (there must be exactly one).
func subScope(t testing.TB, s *State) *Scope {
	t.Helper()
	var out []*Scope
	for _, sc := range s.Scopes {
		if sc.ID != RootScope {
			out = append(out, sc)
		}
	}
	if len(out) != 1 {
		t.Fatalf("sub-process scopes: %d, want 1", len(out))
	}
	return out[0]
}

// snapshot is a deterministic text form of a state for "nothing changed"
// checks (encoding/json sorts map keys).
func snapshot(t testing.TB, s *State) string {
	t.Helper()
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatalf("snapshot: %v", err)
	}
	return string(b)
}

func sameNodes(got, want []string) bool {
	g, w := slices.Clone(got), slices.Clone(want)
	slices.Sort(g)
	slices.Sort(w)
	return slices.Equal(g, w)
}

// assertIncident checks that a technical failure at node raised an open
// incident: the instance stays active, the track holds the token
// in state incident, the cause names every fragment, and the raise was
// announced and recorded.
func assertIncident(t testing.TB, s *State, node string, fragments ...string) *Incident {
	t.Helper()
	assertStatus(t, s, Active)
	var inc *Incident
	for _, i := range s.Incidents {
		if i.Node == node {
			inc = i
		}
	}
	if inc == nil {
		t.Fatalf("no open incident on %q; incidents %+v, failure %+v", node, s.Incidents, s.Failure)
	}
	for _, f := range fragments {
		if !strings.Contains(inc.Cause(), f) {
			t.Errorf("incident cause %q, want it to contain %q", inc.Cause(), f)
		}
	}
	if tr := s.track(inc.Track); tr == nil || tr.State != TrackIncident || tr.Node != node {
		t.Errorf("incident track %q = %+v, want a track in state incident at %q", inc.Track, tr, node)
	}
	if !slices.Contains(s.ActiveNodes(), node) {
		t.Errorf("active nodes %v lack the incident's node %q", s.ActiveNodes(), node)
	}
	var raised, recorded bool
	for _, e := range s.Outbox {
		raised = raised || e.Kind == PublishIncidentFact && e.IncidentFact.Incident == inc.ID && e.IncidentFact.Kind == "raised"
		recorded = recorded || e.Kind == PutIncident && e.Incident.ID == inc.ID
	}
	if !raised || !recorded {
		t.Errorf("raise not announced (%v) or not recorded (%v)", raised, recorded)
	}
	return inc
}
