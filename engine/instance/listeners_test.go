package instance

import (
	"testing"

	"github.com/jetbpm/jetbpm/engine/model"
)

// mark is a JavaScript listener that appends "|"+label (and, when of is
// set, ":" and that variable's value) to the variable trail.
func mark(event, label, of string) model.Listener {
	src := `execution.setVariable("trail", trail + "|` + label + `")`
	if of != "" {
		src = `execution.setVariable("trail", trail + "|` + label + `:" + ` + of + `)`
	}
	return model.Listener{Event: event, Source: src, Language: "javascript"}
}

// Camunda 7's execution listeners run where Camunda 7 runs them: the
// process's start before its start event's, a node's start after its
// input mappings (its locals visible), its end after its output mappings,
// a flow's take between the source's end and the target's start, the
// process's end last.
func TestExecutionListenerOrder(t *testing.T) {
	b := model.NewBuilder("p").
		Listen(mark("start", "ps", "")).Listen(mark("end", "pe", "")).
		StartEvent("s", model.Listen(mark("start", "s-start", "")), model.Listen(mark("end", "s-end", ""))).
		Task("t", model.Input("local", `"L"`), model.Output("out", `local + "!"`),
			model.Listen(mark("start", "t-start", "local")), model.Listen(mark("end", "t-end", "out"))).
		ExclusiveGateway("gw", model.Listen(mark("start", "gw-start", "")), model.Listen(mark("end", "gw-end", ""))).
		EndEvent("e", model.Listen(mark("start", "e-start", "")), model.Listen(mark("end", "e-end", ""))).
		Flow("s", "t", model.OnTake(mark("", "f1", ""))).
		Sequence("t", "gw").
		Flow("gw", "e", model.When("true"), model.OnTake(mark("", "f3", "")))
	s, _ := run(t, b, map[string]any{"trail": ""})
	assertStatus(t, s, Completed)
	assertVars(t, s.Variables(), map[string]any{
		"trail": "|ps|s-start|s-end|f1|t-start:L|t-end:L!|gw-start|gw-end|f3|e-start|e-end|pe",
		"out":   "L!",
	})
}

// What a listener sets is written where execution.setVariable writes it:
// an activity's local stays its own (an input's, or setVariableLocal's,
// which the output mappings still see), anything else goes to the scope
// that has it, else the process. An expression listener's value is what
// it sets; one without a variable is evaluated for nothing but its errors.
func TestExecutionListenerVariables(t *testing.T) {
	b := model.NewBuilder("p").StartEvent("s").
		Task("t", model.Input("n", "1"), model.Output("seen", "n * 10 + scratch"),
			model.Listen(model.Listener{Event: "start", Set: "n", Source: "n + 1"}),
			model.Listen(model.Listener{Event: "start", Set: "scratch", Local: true, Source: "5"}),
			model.Listen(model.Listener{Event: "start", Source: "visits > 0"}),
			model.Listen(model.Listener{Event: "end", Set: "visits", Source: "visits + 1"})).
		EndEvent("e").Sequence("s", "t", "e")
	s, _ := run(t, b, map[string]any{"visits": 1})
	assertStatus(t, s, Completed)
	assertVars(t, s.Variables(), map[string]any{"visits": int64(2), "seen": int64(25)})
	assertNoVar(t, s.Variables(), "n", "scratch")
}

// A multi-instance activity's listeners run for each of its instances.
func TestExecutionListenersPerIteration(t *testing.T) {
	b := model.NewBuilder("p").StartEvent("s").
		Task("t", model.WithLoop(model.Loop{Cardinality: "3", Sequential: true}),
			model.Listen(model.Listener{Event: "start", Set: "starts", Source: "starts + 1"}),
			model.Listen(model.Listener{Event: "end", Set: "ends", Source: "ends + loopCounter"})).
		EndEvent("e").Sequence("s", "t", "e")
	s, _ := run(t, b, map[string]any{"starts": 0, "ends": 0})
	assertStatus(t, s, Completed)
	assertVars(t, s.Variables(), map[string]any{"starts": int64(3), "ends": int64(6)})
}

// A listener that fails is an incident at the element it listens to (a
// take listener's: the flow's source, the process's: where the instance
// starts or ends), naming the listener; a failed start listener keeps the
// element's work from starting.
func TestExecutionListenerFailures(t *testing.T) {
	boom := model.Listener{Source: `null.x`, Language: "javascript"}
	at := func(event string) model.Listener { l := boom; l.Event = event; return l }
	t.Run("start", func(t *testing.T) {
		b := model.NewBuilder("p").StartEvent("s").
			ServiceTask("t", "op", model.Listen(at("start"))).EndEvent("e").Sequence("s", "t", "e")
		s, _ := run(t, b, nil)
		assertIncident(t, s, "t", `start execution listener 1: script "t/listener-1" line 1:`)
		if len(s.Waits) != 0 {
			t.Errorf("the task's work started: waits %s", dumpWaits(s))
		}
	})
	t.Run("end", func(t *testing.T) {
		b := model.NewBuilder("p").StartEvent("s").
			Task("t", model.Listen(model.Listener{Event: "end", Set: "x", Source: "missing.field"})).EndEvent("e").Sequence("s", "t", "e")
		s, _ := run(t, b, nil)
		assertIncident(t, s, "t", "end execution listener 1:")
	})
	t.Run("take", func(t *testing.T) {
		b := model.NewBuilder("p").StartEvent("s").Task("t").EndEvent("e").
			Flow("s", "t", model.FlowID("f1"), model.OnTake(boom)).Sequence("t", "e")
		s, _ := run(t, b, nil)
		assertIncident(t, s, "s", `take execution listener 1 of sequence flow "f1"`)
	})
	t.Run("process start", func(t *testing.T) {
		b := model.NewBuilder("p").Listen(at("start")).StartEvent("s").EndEvent("e").Sequence("s", "e")
		s, _ := run(t, b, nil)
		assertIncident(t, s, "s", "start execution listener 1 of the process")
	})
	t.Run("process end", func(t *testing.T) {
		b := model.NewBuilder("p").Listen(at("end")).StartEvent("s").EndEvent("e").Sequence("s", "e")
		s, _ := run(t, b, nil)
		assertIncident(t, s, "e", "end execution listener 1 of the process")
	})
}
