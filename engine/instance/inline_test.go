package instance

import (
	"slices"
	"testing"
	"time"

	"github.com/jetbpm/jetbpm/engine/model"
)

// TestInlineOperations: an operation the environment runs inline is
// applied within the step (no wait, no RunOperation, no operation watch),
// a chain of them included, with its deadline offered; one it declines
// parks as before; an inline BPMN error is thrown as from the pool.
func TestInlineOperations(t *testing.T) {
	b := model.NewBuilder("inl").StartEvent("s").
		ServiceTask("a", "add", model.Timeout(time.Second)).ServiceTask("b", "add").
		ServiceTask("c", "pooled").ServiceTask("d", "reject").
		ErrorBoundary("caught", "d", "NO").EndEvent("e").EndEvent("e2").
		Sequence("s", "a", "b", "c", "d", "e").Sequence("caught", "e2")
	env := newEnv(build(t, b), nil)
	var dues []time.Time
	env.Inline = func(c Call, due time.Time) (*OperationResult, bool) {
		switch c.Operation {
		case "add":
			dues = append(dues, due)
			n, _ := c.Input["n"].(int64)
			return &OperationResult{Kind: OperationCompleted, Output: map[string]any{"n": n + 1}}, true
		case "reject":
			return &OperationResult{Kind: OperationThrew, Code: "NO"}, true
		}
		return nil, false
	}
	s := start(t, env, map[string]any{"n": 0})
	assertVars(t, s.Variables(), map[string]any{"n": int64(2)})
	if len(dues) != 2 || !dues[0].Equal(t0.Add(time.Second)) || !dues[1].IsZero() {
		t.Fatalf("deadlines offered %v, want the task's own, then none (no default here)", dues)
	}
	w := waitAt(t, s, "c")
	if w.Kind != OperationWait {
		t.Fatalf("the declined operation waits on %+v, want an operation wait", w)
	}
	var runs, schedules int
	for _, e := range s.Outbox {
		switch e.Kind {
		case RunOperation:
			runs++
			if e.Wait != w.ID {
				t.Fatalf("RunOperation for %s, want only the declined task's %s", e.Wait, w.ID)
			}
		case ScheduleTimer:
			schedules++
		}
	}
	// a's one-second deadline armed no operation watch (it ran inline);
	// c has no deadline here, so it arms none either.
	if runs != 1 || schedules != 0 {
		t.Fatalf("%d RunOperation and %d timer effects, want 1 (the declined task) and 0", runs, schedules)
	}
	apply(t, s, env, OperationEvent(w.ID, &OperationResult{Kind: OperationCompleted}))
	assertStatus(t, s, Completed)
	if !slices.Contains(s.Passed, "caught") || !slices.Contains(s.Passed, "e2") || slices.Contains(s.Passed, "e") {
		t.Fatalf("the inline BPMN error was not caught by the boundary: passed %v", s.Passed)
	}
}
