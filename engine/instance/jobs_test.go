package instance

import (
	"slices"
	"testing"

	"github.com/jetbpm/jetbpm/engine/model"
)

// A task whose every completion is a BPMN error (Camunda 7's
// camunda:errorEventDefinition that always holds): the completion's
// variables are written, then the error is thrown, caught by a boundary
// or, uncaught, an incident.
func TestCompleteError(t *testing.T) {
	task := func(caught bool) *model.Builder {
		b := model.NewBuilder("p").StartEvent("s").
			ServiceTask("call", "", model.WithWorker("http", model.WithCompleteError("NOT_FOUND"))).
			EndEvent("e").Sequence("s", "call", "e")
		if caught {
			b.ErrorBoundary("missing", "call", "NOT_FOUND").ScriptTask("handle", "status", "seen").EndEvent("e2").
				Sequence("missing", "handle", "e2")
		}
		return b
	}
	s, env := run(t, task(true), nil)
	apply(t, s, env, jobDoneEvent(waitAt(t, s, "call"), map[string]any{"status": 404}))
	assertStatus(t, s, Completed)
	assertVars(t, s.Variables(), map[string]any{"status": int64(404), "seen": int64(404)})

	s, env = run(t, task(false), nil)
	apply(t, s, env, jobDoneEvent(waitAt(t, s, "call"), nil))
	assertIncident(t, s, "call", `uncaught BPMN error "NOT_FOUND"`)
	if !slices.Equal(s.ActiveNodes(), []string{"call"}) {
		t.Fatalf("active nodes %v", s.ActiveNodes())
	}
}
