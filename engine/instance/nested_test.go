package instance

import (
	"reflect"
	"testing"

	"github.com/jetbpm/jetbpm/engine/model"
)

// Nested mapping targets, as Zeebe's connector templates write them: an
// input "authentication.type" builds the local object authentication
// property by property; an output "order.status" sets one property of
// the variable order, keeping the others, and creates what is missing.
func TestNestedMappingTargets(t *testing.T) {
	b := model.NewBuilder("p").StartEvent("s").
		ScriptTask("t", "authentication.type + ':' + authentication.token + ':' + method", "summary",
			model.Input("authentication.type", `"bearer"`),
			model.Input("authentication.token", "secret"),
			model.Input("method", `"GET"`),
			model.Output("order.status", `"sent"`),
			model.Output("order.audit.by", "summary"),
			model.Output("fresh.a.b", "1")).
		EndEvent("e").Sequence("s", "t", "e")
	order := map[string]any{"id": "o-1", "status": "new"}
	s, _ := run(t, b, map[string]any{"secret": "xyz", "order": order})
	assertStatus(t, s, Completed)
	assertVars(t, s.Variables(), map[string]any{
		"order": map[string]any{"id": "o-1", "status": "sent", "audit": map[string]any{"by": "bearer:xyz:GET"}},
		"fresh": map[string]any{"a": map[string]any{"b": int64(1)}},
	})
	assertNoVar(t, s.Variables(), "authentication", "method", "summary")
	if !reflect.DeepEqual(order, map[string]any{"id": "o-1", "status": "new"}) {
		t.Errorf("the caller's map was changed: %v", order)
	}
}
