package instance

import (
	"math"
	"testing"

	"github.com/jetbpm/jetbpm/engine/model"
)

// An operator's SetVars writes at the root through the variable-write
// path: a conditional catch filtered to updates ignores the create and
// fires on the update; an event id applied before is skipped; an event
// with a refused value changes nothing.
func TestSetVars(t *testing.T) {
	b := model.NewBuilder("sv").StartEvent("start").
		ConditionalCatchEvent("wait", "${x > 5}", model.ConditionEvents(model.VariableUpdate)).
		EndEvent("end").Sequence("start", "wait", "end")
	s, env := run(t, b, nil)
	waitAt(t, s, "wait")

	setVars := func(id string, vars map[string]any) Event { return Event{ID: id, Kind: SetVars, Vars: vars} }
	if n := apply(t, s, env, setVars("vars:a", map[string]any{"x": int64(10)})); n != 1 {
		t.Fatalf("vars:a applied %d", n)
	}
	waitAt(t, s, "wait") // a create: the filter wants an update
	if n := apply(t, s, env, setVars("vars:a", map[string]any{"x": int64(20)})); n != 0 {
		t.Fatalf("vars:a again applied %d", n)
	}
	if n := apply(t, s, env, setVars("vars:b", map[string]any{"x": math.NaN(), "y": int64(1)})); n != 0 {
		t.Fatalf("vars:b with a NaN applied %d", n)
	}
	assertVars(t, s.Variables(), map[string]any{"x": int64(10)})
	if n := apply(t, s, env, setVars("vars:c", map[string]any{"x": int64(11)})); n != 1 {
		t.Fatalf("vars:c applied %d", n)
	}
	assertStatus(t, s, Completed)
	assertVars(t, s.Variables(), map[string]any{"x": int64(11)})
	if n := apply(t, s, env, setVars("vars:d", map[string]any{"x": int64(12)})); n != 0 {
		t.Fatalf("vars:d on a finished instance applied %d", n)
	}
}
