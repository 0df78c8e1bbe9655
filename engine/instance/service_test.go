package instance

import (
	"context"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jetbpm/jetbpm/engine/model"
)

// one builds start → the activity added by add (id "act") → end.
func one(id string, add func(b *model.Builder)) *model.Builder {
	b := model.NewBuilder(id).StartEvent("start")
	add(b)
	return b.EndEvent("end").Sequence("start", "act", "end")
}

func TestScriptTaskWritesResultVariable(t *testing.T) {
	s, _ := run(t, one("script", func(b *model.Builder) {
		b.ScriptTask("act", "amount * 2", "doubled")
	}), map[string]any{"amount": 21})
	assertStatus(t, s, Completed)
	assertVars(t, s.Variables(), map[string]any{"doubled": int64(42), "amount": int64(21)})
}

func TestScriptTaskMappings(t *testing.T) {
	s, _ := run(t, one("script", func(b *model.Builder) {
		b.ScriptTask("act", "base + extra", "sum",
			model.Input("base", "amount * 10"), model.Input("extra", "base + 1"), // inputs see earlier inputs
			model.Output("total", "sum"), model.Output("seenBase", "base"))
	}), map[string]any{"amount": 2})
	assertStatus(t, s, Completed)
	assertVars(t, s.Variables(), map[string]any{"total": int64(41), "seenBase": int64(20)})
	// Locals and an unmapped result stay local when outputs are declared.
	assertNoVar(t, s.Variables(), "base", "extra", "sum")
}

func TestMappingErrorsFail(t *testing.T) {
	tests := []struct {
		name     string
		opts     []model.NodeOption
		fragment string
	}{
		{"output", []model.NodeOption{model.Output("bad", "missing + 1")}, `output mapping "bad"`},
		{"output of result", []model.NodeOption{model.Output("ok", "r"), model.Output("bad", "r.x + 1")}, `output mapping "bad"`},
		{"input", []model.NodeOption{model.Input("bad", "missing * 2")}, `input mapping "bad"`},
	}
	for _, tt := range tests {
		t.Run(tt.name+"/script", func(t *testing.T) {
			s, _ := run(t, one("m", func(b *model.Builder) {
				b.ScriptTask("act", "1", "r", tt.opts...)
			}), nil)
			assertIncident(t, s, "act", tt.fragment)
		})
		t.Run(tt.name+"/service", func(t *testing.T) {
			x := newExec(map[string]opFunc{"op": returns(map[string]any{"r": 1})})
			env := newEnv(build(t, one("m", func(b *model.Builder) {
				b.ServiceTask("act", "op", tt.opts...)
			})), x)
			s := start(t, env, nil)
			assertIncident(t, s, "act", tt.fragment)
			assertNoVar(t, s.Variables(), "r")
		})
	}
}

// TestOutputMappingsAllOrNothing: when one output mapping (or a refused
// result) fails, the task's outputs are not partly written: a failed task
// leaves the variables as they were before it ran.
func TestOutputMappingsAllOrNothing(t *testing.T) {
	t.Run("mapping", func(t *testing.T) {
		x := newExec(map[string]opFunc{"op": returns(map[string]any{"r": 1})})
		env := newEnv(build(t, one("m", func(b *model.Builder) {
			b.ServiceTask("act", "op", model.Output("ok", "r"), model.Output("bad", "r.x + 1"))
		})), x)
		s := start(t, env, nil)
		assertIncident(t, s, "act", `output mapping "bad"`)
		assertNoVar(t, s.Variables(), "ok")
	})
	t.Run("CheckValue", func(t *testing.T) {
		x := newExec(map[string]opFunc{"op": returns(map[string]any{"a": 1, "z": "too long"})})
		env := newEnv(build(t, one("m", func(b *model.Builder) { b.ServiceTask("act", "op") })), x)
		env.CheckValue = func(name string, v any) error {
			if name == "z" {
				return errors.New("too big")
			}
			return nil
		}
		s := start(t, env, nil)
		assertIncident(t, s, "act", `variable "z"`)
		assertNoVar(t, s.Variables(), "a")
	})
}

func TestServiceTaskMappings(t *testing.T) {
	var got map[string]any
	x := newExec(map[string]opFunc{"price": func(_ context.Context, c Call) (map[string]any, error) {
		got = c.Input
		return map[string]any{"net": c.Input["qty"].(int64) * 3, "noise": true}, nil
	}})
	env := newEnv(build(t, one("svc", func(b *model.Builder) {
		b.ServiceTask("act", "price", model.Input("qty", "order.qty"), model.Input("vip", "order.vip"),
			model.Output("gross", "net * 2"), model.Output("qtyEcho", "qty"))
	})), x)
	s := start(t, env, map[string]any{"order": map[string]any{"qty": 4, "vip": true}, "secret": "s3"})
	assertStatus(t, s, Completed)
	if want := map[string]any{"qty": int64(4), "vip": true}; !reflect.DeepEqual(got, want) {
		t.Errorf("Input = %v, want only the mapped inputs %v", got, want)
	}
	assertVars(t, s.Variables(), map[string]any{"gross": int64(24), "qtyEcho": int64(4)})
	assertNoVar(t, s.Variables(), "net", "noise", "qty", "vip")
}

func TestServiceInputIsDeepCopyOfVisible(t *testing.T) {
	var call Call
	x := newExec(map[string]opFunc{"meddle": func(_ context.Context, c Call) (map[string]any, error) {
		call = c
		c.Input["order"].(map[string]any)["qty"] = int64(999)
		c.Input["tags"].([]any)[0] = "changed"
		c.Input["added"] = "x"
		delete(c.Input, "name")
		return nil, nil
	}})
	env := newEnv(build(t, one("svc", func(b *model.Builder) { b.ServiceTask("act", "meddle") })), x)
	vars := map[string]any{"order": map[string]any{"qty": 4}, "tags": []any{"a", "b"}, "name": "n"}
	s := start(t, env, vars)
	assertStatus(t, s, Completed)
	if call.InstanceID != "i1" || call.Node != "act" || call.Operation != "meddle" || call.Activation == 0 {
		t.Errorf("call = %+v", call)
	}
	want := map[string]any{"order": map[string]any{"qty": int64(4)}, "tags": []any{"a", "b"}, "name": "n"}
	if !reflect.DeepEqual(s.Variables(), want) {
		t.Errorf("variables = %v, want unchanged %v", s.Variables(), want)
	}
	if vars["order"].(map[string]any)["qty"] != 4 {
		t.Error("the caller's start variables were changed")
	}
}

func TestServiceActivationPerVisit(t *testing.T) {
	x := newExec(map[string]opFunc{"count": func(_ context.Context, c Call) (map[string]any, error) {
		return map[string]any{"n": c.Input["n"].(int64) + 1}, nil
	}})
	b := model.NewBuilder("loop").
		StartEvent("start").ServiceTask("svc", "count").ExclusiveGateway("more").EndEvent("end").
		Sequence("start", "svc", "more").
		Flow("more", "svc", model.When("n < 3")).
		DefaultFlow("more", "end")
	s := start(t, newEnv(build(t, b), x), map[string]any{"n": 0})
	assertStatus(t, s, Completed)
	assertVars(t, s.Variables(), map[string]any{"n": int64(3)})
	var acts []uint64
	for _, c := range x.calls {
		acts = append(acts, c.Activation)
	}
	if len(acts) != 3 || len(slices.Compact(slices.Sorted(slices.Values(acts)))) != 3 {
		t.Errorf("activations = %v, want 3 distinct", acts)
	}
}

type payload struct {
	Name  string    `json:"name"`
	Count int       `json:"count"`
	When  time.Time `json:"when"`
	Inner struct {
		Ratio float64 `json:"ratio"`
	} `json:"inner"`
}

func TestServiceResultsNormalized(t *testing.T) {
	when := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	p := payload{Name: "n", Count: 3, When: when}
	p.Inner.Ratio = 0.5
	x := newExec(map[string]opFunc{"op": returns(map[string]any{
		"struct": p,
		"ptr":    &p,
		"i32":    int32(7),
		"u8":     uint8(9),
		"f32":    float32(1.5),
		"time":   time.Date(2026, 1, 2, 4, 4, 5, 0, time.FixedZone("CET", 3600)),
		"list":   []int{1, 2},
		"m":      map[string]int{"a": 1},
	})})
	s := start(t, newEnv(build(t, one("n", func(b *model.Builder) { b.ServiceTask("act", "op") })), x), nil)
	assertStatus(t, s, Completed)
	structWant := map[string]any{"name": "n", "count": int64(3), "when": "2026-01-02T03:04:05Z", "inner": map[string]any{"ratio": 0.5}}
	want := map[string]any{
		"struct": structWant,
		"ptr":    structWant,
		"i32":    int64(7),
		"u8":     int64(9),
		"f32":    1.5,
		"time":   "2026-01-02T03:04:05Z",
		"list":   []any{int64(1), int64(2)},
		"m":      map[string]any{"a": int64(1)},
	}
	if !reflect.DeepEqual(s.Variables(), want) {
		t.Errorf("variables = %#v\nwant %#v", s.Variables(), want)
	}
}

func TestServiceFailures(t *testing.T) {
	tests := []struct {
		name string
		op   opFunc
		want []string
	}{
		{"error", func(context.Context, Call) (map[string]any, error) { return nil, errors.New("card declined") },
			[]string{`operation "op" failed`, "card declined"}},
		{"panic", func(context.Context, Call) (map[string]any, error) { panic("boom") },
			[]string{`operation "op" failed`, "panic: boom"}},
		{"nil map panic", func(context.Context, Call) (map[string]any, error) {
			var m map[string]any
			//lint:ignore SA5000 the nil-map panic is what the test raises
			m["x"] = 1
			return m, nil
		}, []string{"panic"}},
		{"unsupported result", returns(map[string]any{"ch": make(chan int)}),
			[]string{`operation "op" returned`, `"ch"`, "chan int"}},
		{"NaN result", returns(map[string]any{"f": math.NaN()}),
			[]string{`"f"`, "not a storable number"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			x := newExec(map[string]opFunc{"op": tt.op})
			b := one("f", func(b *model.Builder) { b.ServiceTask("act", "op") })
			var s *State
			func() {
				defer func() {
					if v := recover(); v != nil {
						t.Fatalf("panic escaped the step: %v", v)
					}
				}()
				s = start(t, newEnv(build(t, b), x), map[string]any{"keep": 1})
			}()
			assertIncident(t, s, "act", tt.want...)
			assertNoVar(t, s.Variables(), "ch", "f", "x")
		})
	}
}

// TestServiceParksOnOperationWait: an in-process task does not run its
// operation in the step: it parks on an operation wait, asks for the run
// with its input and deadline, and schedules the deadline as a durable
// timer. A result wakes it once; a result for another wait, or a second
// one, is discarded.
func TestServiceParksOnOperationWait(t *testing.T) {
	env := newEnv(build(t, one("park", func(b *model.Builder) {
		b.ServiceTask("act", "op", model.Input("qty", "n * 2"))
	})), nil)
	env.DefaultTimeout = 30 * time.Second
	var discarded []Event
	env.Discarded = func(ev Event) { discarded = append(discarded, ev) }
	s := start(t, env, map[string]any{"n": 2})
	assertStatus(t, s, Active)
	w := waitAt(t, s, "act")
	if w.Kind != OperationWait || !w.Due.Equal(t0.Add(30*time.Second)) || !w.Armed.Equal(t0) {
		t.Fatalf("wait %+v", w)
	}
	runs := effects(s, RunOperation)
	if len(runs) != 1 || runs[0].Wait != w.ID || !runs[0].Due.Equal(w.Due) {
		t.Fatalf("RunOperation effects %+v", runs)
	}
	c := runs[0].Call
	if c.InstanceID != "i1" || c.Node != "act" || c.Operation != "op" || c.Activation == 0 ||
		!reflect.DeepEqual(c.Input, map[string]any{"qty": int64(4)}) {
		t.Errorf("call %+v", c)
	}
	if got := effectWaits(s, ScheduleTimer); !slices.Equal(got, []string{"i1/operations"}) || !effects(s, ScheduleTimer)[0].Due.Equal(w.Due) {
		t.Errorf("timers %v, want the operation watch due at the deadline", got)
	}
	flush(s)

	done := &OperationResult{Kind: OperationCompleted, Output: map[string]any{"r": int64(1)}}
	if n := apply(t, s, env, OperationEvent(w.ID+"x", done)); n != 0 {
		t.Fatalf("a result for another wait applied (%d)", n)
	}
	if n := apply(t, s, env, OperationEvent(w.ID, done), OperationEvent(w.ID, done)); n != 1 {
		t.Fatalf("applied %d results, want 1", n)
	}
	assertStatus(t, s, Completed)
	assertVars(t, s.Variables(), map[string]any{"r": int64(1)})
	if len(discarded) != 2 || discarded[1].Wait != w.ID {
		t.Errorf("discarded %+v, want the stray and the duplicate result", discarded)
	}
	if got := effects(s, CancelOperation); len(got) != 0 {
		t.Errorf("CancelOperation effects %+v after the result, want none", got)
	}
	if got := effectWaits(s, CancelTimer); len(s.Waits) != 0 || !slices.Equal(got, []string{"i1/operations"}) {
		t.Errorf("waits %s, timer cancels %v: want the watch gone with the instance", dumpWaits(s), got)
	}
}

// TestServiceTimeoutTimerFires: the operation watch decides when the
// engine's report never comes (its node died): the task times out, and a
// result that arrives later is discarded. A timer event naming the
// operation's own wait does nothing.
func TestServiceTimeoutTimerFires(t *testing.T) {
	env := newEnv(build(t, one("to", func(b *model.Builder) {
		b.ServiceTask("act", "slow", model.Timeout(2*time.Second))
	})), nil)
	s := start(t, env, nil)
	w := waitAt(t, s, "act")
	if n := apply(t, s, env, Event{Kind: TimerFired, Wait: w.ID}); n != 0 {
		t.Fatalf("a timer event for the operation wait applied")
	}
	fire(t, s, env, "")
	inc := assertIncident(t, s, "act", `operation "slow" timed out after 2s`)
	if inc.CauseClass != "operation" {
		t.Errorf("cause class %q", inc.CauseClass)
	}
	before := snapshot(t, s)
	late := &OperationResult{Kind: OperationCompleted, Output: map[string]any{"late": true}}
	if n := apply(t, s, env, OperationEvent(w.ID, late)); n != 0 || snapshot(t, s) != before {
		t.Fatalf("a late result was applied (%d)", n)
	}
}

// TestServiceResultKinds: what each result does to the task.
func TestServiceResultKinds(t *testing.T) {
	b := model.NewBuilder("kinds").
		StartEvent("start").ServiceTask("act", "op", model.Timeout(time.Minute)).EndEvent("end").
		ErrorBoundary("caught", "act", "E1").EndEvent("errEnd").
		Sequence("start", "act", "end").Flow("caught", "errEnd")
	for _, tc := range []struct {
		res  OperationResult
		want []string // incident fragments; nil = completed
	}{
		{OperationResult{Kind: OperationCompleted}, nil},
		{OperationResult{Kind: OperationThrew, Code: "E1"}, nil},
		{OperationResult{Kind: OperationThrew, Code: "E2", Message: "other"}, []string{`uncaught BPMN error "E2"`, "other"}},
		{OperationResult{Kind: OperationFailed, Message: `operation "op" failed: down`}, []string{`operation "op" failed: down`}},
		{OperationResult{Kind: OperationFailed}, []string{`operation "op" failed`}},
		{OperationResult{Kind: OperationTimedOut}, []string{`operation "op" timed out after 1m0s`}},
	} {
		t.Run(string(tc.res.Kind)+tc.res.Code, func(t *testing.T) {
			env := newEnv(build(t, b), nil)
			s := start(t, env, nil)
			w := waitAt(t, s, "act")
			res := tc.res
			apply(t, s, env, OperationEvent(w.ID, &res))
			if tc.want == nil {
				assertStatus(t, s, Completed)
				return
			}
			assertIncident(t, s, "act", tc.want...)
		})
	}
}

func TestCheckValueRefusesVariable(t *testing.T) {
	x := newExec(map[string]opFunc{"op": returns(map[string]any{"big": strings.Repeat("x", 100)})})
	env := newEnv(build(t, one("f", func(b *model.Builder) { b.ServiceTask("act", "op") })), x)
	env.CheckValue = func(name string, v any) error {
		if s, ok := v.(string); ok && len(s) > 10 {
			return fmt.Errorf("%d bytes is over the limit", len(s))
		}
		return nil
	}
	s := start(t, env, nil)
	assertIncident(t, s, "act", `variable "big"`, "over the limit")
}

// blockOnCtx is an operation that waits for its context, bounded so a
// broken deadline fails the test instead of hanging it. It refuses a
// deadline further away than max.
func blockOnCtx(max time.Duration) opFunc {
	return func(ctx context.Context, _ Call) (map[string]any, error) {
		dl, ok := ctx.Deadline()
		if !ok {
			return nil, errors.New("test: operation has no deadline")
		}
		if d := time.Until(dl); d > max {
			return nil, fmt.Errorf("test: deadline %v away, want at most %v", d, max)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(10 * time.Second):
			return nil, errors.New("test: context never expired")
		}
	}
}

func TestServiceTimeout(t *testing.T) {
	x := newExec(map[string]opFunc{"slow": blockOnCtx(time.Second)})
	env := newEnv(build(t, one("to", func(b *model.Builder) {
		b.ServiceTask("act", "slow", model.Timeout(20*time.Millisecond))
	})), x)
	s := start(t, env, nil)
	assertIncident(t, s, "act", `operation "slow" timed out after 20ms`)
}

func TestServiceDefaultTimeout(t *testing.T) {
	x := newExec(map[string]opFunc{"slow": blockOnCtx(time.Second)})
	env := newEnv(build(t, one("to", func(b *model.Builder) { b.ServiceTask("act", "slow") })), x)
	env.DefaultTimeout = 20 * time.Millisecond
	s := start(t, env, nil)
	assertIncident(t, s, "act", "timed out after 20ms")
}

func TestServiceBpmnErrorBoundary(t *testing.T) {
	throw := func(err error) opFunc {
		return func(context.Context, Call) (map[string]any, error) { return map[string]any{"lost": 1}, err }
	}
	tests := []struct {
		name string
		err  error
		want string // variable "via" written by the path taken; "" = failed
	}{
		{"specific code", &BpmnError{Code: "DECLINED"}, "declined"},
		{"wrapped", fmt.Errorf("charging: %w", &BpmnError{Code: "DECLINED", Message: "no funds"}), "declined"},
		{"catch-all", &BpmnError{Code: "OTHER"}, "any"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := model.NewBuilder("be").
				StartEvent("start").ServiceTask("charge", "charge").EndEvent("end").
				// the catch-all is declared first: the specific code must still win
				ErrorBoundary("anyErr", "charge", "").ScriptTask("onAny", "'any'", "via").
				ErrorBoundary("declined", "charge", "DECLINED").ScriptTask("onDeclined", "'declined'", "via").
				EndEvent("errEnd").
				Sequence("start", "charge", "end").
				Sequence("anyErr", "onAny", "errEnd").
				Sequence("declined", "onDeclined", "errEnd")
			x := newExec(map[string]opFunc{"charge": throw(tt.err)})
			s := start(t, newEnv(build(t, b), x), nil)
			assertStatus(t, s, Completed)
			assertVars(t, s.Variables(), map[string]any{"via": tt.want})
			assertNoVar(t, s.Variables(), "lost")
		})
	}
	t.Run("uncaught", func(t *testing.T) {
		b := model.NewBuilder("be").
			StartEvent("start").ServiceTask("charge", "charge").EndEvent("end").
			ErrorBoundary("declined", "charge", "DECLINED").EndEvent("errEnd").
			Sequence("start", "charge", "end").
			Flow("declined", "errEnd")
		x := newExec(map[string]opFunc{"charge": throw(&BpmnError{Code: "FRAUD", Message: "flagged"})})
		s := start(t, newEnv(build(t, b), x), nil)
		if inc := assertIncident(t, s, "charge", `uncaught BPMN error "FRAUD"`, "flagged"); inc.CauseClass != "bpmnError" {
			t.Errorf("cause class %q, want bpmnError", inc.CauseClass)
		}
	})
}

// TestServiceInterruptedByTimerBoundary: an interrupting timer boundary
// fires while the operation runs: the task is left through the boundary,
// the run is cancelled with its timeout purged, and its result, when it
// comes, is discarded.
func TestServiceInterruptedByTimerBoundary(t *testing.T) {
	b := model.NewBuilder("tb").
		StartEvent("start").ServiceTask("call", "slow", model.Timeout(time.Hour)).ScriptTask("done", "'ok'", "path").EndEvent("end").
		TimerBoundary("tooLong", "call", model.Duration("PT0.02S"), true).ScriptTask("late", "'late'", "path").EndEvent("lateEnd").
		Sequence("start", "call", "done", "end").
		Sequence("tooLong", "late", "lateEnd")
	env := newEnv(build(t, b), nil)
	s := start(t, env, nil)
	op := waitAt(t, s, "call")
	if got := effectWaits(s, ScheduleTimer); len(got) != 2 {
		t.Fatalf("timers %v, want the boundary and the operation watch", got)
	}
	flush(s)
	fire(t, s, env, "tooLong")
	assertStatus(t, s, Completed)
	assertVars(t, s.Variables(), map[string]any{"path": "late"})
	if got := effects(s, CancelOperation); len(got) != 1 || got[0].Wait != op.ID {
		t.Errorf("CancelOperation effects %+v, want one for %s", got, op.ID)
	}
	done := &OperationResult{Kind: OperationCompleted, Output: map[string]any{"r": 1}}
	if n := apply(t, s, env, OperationEvent(op.ID, done)); n != 0 {
		t.Errorf("the interrupted task's result applied")
	}
}

// TestServiceNonInterruptingBoundaryWhileOperationRuns: a
// non-interrupting timer fires while the operation runs (it could not
// when operations ran inside the step), and the result still completes
// the task.
func TestServiceNonInterruptingBoundaryWhileOperationRuns(t *testing.T) {
	b := model.NewBuilder("tb").
		StartEvent("start").ServiceTask("call", "slow").EndEvent("end").
		TimerBoundary("remind", "call", model.Duration("PT1M"), false).ScriptTask("note", "'reminded'", "note").EndEvent("noteEnd").
		Sequence("start", "call", "end").
		Sequence("remind", "note", "noteEnd")
	env := newEnv(build(t, b), nil)
	s := start(t, env, nil)
	op := waitAt(t, s, "call")
	fire(t, s, env, "remind")
	assertStatus(t, s, Active)
	assertVars(t, s.Variables(), map[string]any{"note": "reminded"})
	apply(t, s, env, OperationEvent(op.ID, &OperationResult{Kind: OperationCompleted, Output: map[string]any{"r": 1}}))
	assertStatus(t, s, Completed)
	assertVars(t, s.Variables(), map[string]any{"r": int64(1)})
}

// TestServiceCancelledInTheSameStep: a task entered and cancelled in one
// step takes back its run and its timeout instead of cancelling them.
func TestServiceCancelledInTheSameStep(t *testing.T) {
	b := model.NewBuilder("same").
		StartEvent("start").TimerCatchEvent("wait", model.Duration("PT1M")).ServiceTask("call", "op", model.Timeout(time.Minute)).EndEvent("end").
		Sequence("start", "wait", "call", "end")
	env := newEnv(build(t, b), nil)
	s := start(t, env, nil)
	flush(s)
	w := waitAt(t, s, "wait")
	env.Now = w.Due
	apply(t, s, env, timerEvent(w), Event{ID: "c", Kind: Cancel})
	assertStatus(t, s, Terminated)
	for _, k := range []EffectKind{RunOperation, ScheduleTimer, CancelOperation, CancelTimer} {
		if got := effects(s, k); len(got) != 0 {
			t.Errorf("%s effects %+v, want none", k, got)
		}
	}
}

// TestOperationWatch: one durable timer watches every operation of an
// instance, due at the earliest deadline. An earlier deadline moves it
// (the later firing is refused); when it fires, only the operations past
// their deadline time out and it is set for the next one.
func TestOperationWatch(t *testing.T) {
	b := model.NewBuilder("watch").StartEvent("start").ParallelGateway("fork").
		ServiceTask("slow", "op", model.Timeout(time.Minute)).
		TimerCatchEvent("pause", model.Duration("PT1S")).ServiceTask("quick", "op", model.Timeout(10*time.Second)).
		ServiceTask("long", "op", model.Timeout(time.Hour)).
		ParallelGateway("join").EndEvent("end").
		Sequence("start", "fork", "slow", "join", "end").
		Sequence("fork", "pause", "quick", "join").
		Sequence("fork", "long", "join")
	env := newEnv(build(t, b), nil)
	s := start(t, env, nil)
	watch := waitAt(t, s, "")
	if watch.Kind != OperationWatch || !watch.Due.Equal(t0.Add(time.Minute)) || watch.Firing != 0 {
		t.Fatalf("watch %+v, want due at the first deadline", watch)
	}
	if got := effectWaits(s, ScheduleTimer); !slices.Equal(got, []string{"i1/operations", waitAt(t, s, "pause").ID}) {
		t.Fatalf("timers %v: want one watch for the two operations, and the pause", got)
	}
	flush(s)
	first := *watch

	// quick starts at t0+1s with a deadline at t0+11s: the watch moves.
	fire(t, s, env, "pause")
	watch = waitAt(t, s, "")
	if !watch.Due.Equal(t0.Add(11*time.Second)) || watch.Firing != 1 {
		t.Fatalf("watch %+v, want due at quick's deadline, firing 1", watch)
	}
	if n := apply(t, s, env, timerEvent(&first)); n != 0 {
		t.Fatal("the replaced watch's firing was applied")
	}
	quick := waitAt(t, s, "quick").ID
	flush(s)

	// It fires: quick times out; slow and long do not; it is set for slow.
	fire(t, s, env, "")
	assertIncident(t, s, "quick", `operation "op" timed out after 10s`)
	if len(s.Incidents) != 1 {
		t.Fatalf("incidents %+v, want quick's only", s.Incidents)
	}
	watch = waitAt(t, s, "")
	if !watch.Due.Equal(t0.Add(time.Minute)) || watch.Firing != 2 {
		t.Fatalf("watch %+v, want due at slow's deadline, firing 2", watch)
	}
	if got := effectWaits(s, CancelOperation); !slices.Equal(got, []string{quick}) {
		t.Errorf("CancelOperation for %v, want quick's", got)
	}

	// Once no operation is left when it fires, the watch is gone.
	for _, node := range []string{"slow", "long"} {
		apply(t, s, env, OperationEvent(waitAt(t, s, node).ID, &OperationResult{Kind: OperationCompleted}))
	}
	fire(t, s, env, "")
	for _, w := range s.Waits {
		if w.Kind == OperationWatch {
			t.Fatalf("watch left with no operation: %s", dumpWaits(s))
		}
	}
}
