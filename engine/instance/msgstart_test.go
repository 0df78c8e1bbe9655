package instance

import (
	"reflect"
	"strings"
	"testing"

	"github.com/jetbpm/jetbpm/engine/model"
)

// ordered has a message start "placed", a none start, and a receive task
// "pay" the instance waits at.
func ordered(startOpts ...model.NodeOption) *model.Builder {
	return model.NewBuilder("ordered").MessageStartEvent("placed", "order-placed", startOpts...).StartEvent("start").
		ReceiveTask("pay", "paid", "'k'").EndEvent("end").
		Flow("placed", "pay").Flow("start", "pay").Flow("pay", "end")
}

func TestMessageStart(t *testing.T) {
	corr := &Correlation{Name: "order-placed", Key: "o-1", Seq: 4, MessageID: "m-1"}
	msg := map[string]any{"order": "o-1", "amount": 20}
	t.Run("without outputs every message variable is kept", func(t *testing.T) {
		env := newEnv(build(t, ordered()), nil)
		s := startWith(t, env, msg, Begin{Node: "placed", Message: corr, BusinessKey: "B-1"})
		assertStatus(t, s, Active)
		assertVars(t, s.Variables(), map[string]any{"order": "o-1", "amount": int64(20)})
		if !reflect.DeepEqual(s.StartMessage, corr) || s.BusinessKey != "B-1" {
			t.Errorf("StartMessage %+v, BusinessKey %q", s.StartMessage, s.BusinessKey)
		}
		waitAt(t, s, "pay")
	})
	t.Run("outputs decide what is kept", func(t *testing.T) {
		env := newEnv(build(t, ordered(model.Output("orderId", "order"))), nil)
		s := startWith(t, env, msg, Begin{Node: "placed", Message: corr})
		assertVars(t, s.Variables(), map[string]any{"orderId": "o-1"})
		assertNoVar(t, s.Variables(), "order", "amount")
	})
	t.Run("refused starts", func(t *testing.T) {
		env := newEnv(build(t, ordered()), nil)
		for _, b := range []Begin{{Node: "start", Message: corr}, {Node: "pay"}, {Node: "nope"}} {
			if _, err := StartFrom("i1", env.Env, nil, b); err == nil {
				t.Errorf("StartFrom(%+v) succeeded", b)
			}
		}
		if _, err := StartFrom("i1", env.Env, nil, Begin{Node: "start", Message: corr}); err == nil || !strings.Contains(err.Error(), "not a message start event") {
			t.Errorf("err = %v", err)
		}
	})
}

// An instance a keyed message started tells the message partition when it
// ends, however it ends.
func TestStartEndedOnFinish(t *testing.T) {
	corr := &Correlation{Name: "order-placed", Key: "o-1", Seq: 4}
	ends := map[string]func(t *testing.T, s *State, env *testEnv){
		"completed": func(t *testing.T, s *State, env *testEnv) { correlate(t, s, env, "pay", 1, nil) },
		"terminated": func(t *testing.T, s *State, env *testEnv) {
			apply(t, s, env, Event{ID: "c", Kind: Cancel})
		},
		"failed": func(t *testing.T, s *State, _ *testEnv) { Abort(s, t0, "broken") },
	}
	for name, end := range ends {
		t.Run(name, func(t *testing.T) {
			env := newEnv(build(t, ordered()), nil)
			s := startWith(t, env, nil, Begin{Node: "placed", Message: corr})
			if got := effects(s, StartEnded); len(got) != 0 {
				t.Fatalf("StartEnded %+v while active", got)
			}
			flush(s)
			end(t, s, env)
			if !s.Status.Finished() {
				t.Fatalf("status %s", s.Status)
			}
			want := []Effect{{ID: "startEnded:i1", Kind: StartEnded, Correlation: corr}}
			if got := effects(s, StartEnded); !reflect.DeepEqual(got, want) {
				t.Errorf("StartEnded = %+v, want %+v", got, want)
			}
		})
	}
	t.Run("no key, no effect", func(t *testing.T) {
		env := newEnv(build(t, ordered()), nil)
		s := startWith(t, env, nil, Begin{Node: "placed", Message: &Correlation{Name: "order-placed", Seq: 1}})
		apply(t, s, env, Event{ID: "c", Kind: Cancel})
		if got := effects(s, StartEnded); len(got) != 0 {
			t.Errorf("StartEnded %+v for a message without a key", got)
		}
		s = start(t, env, nil)
		apply(t, s, env, Event{ID: "c", Kind: Cancel})
		if got := effects(s, StartEnded); len(got) != 0 {
			t.Errorf("StartEnded %+v for an instance no message started", got)
		}
	})
}
