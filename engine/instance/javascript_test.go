package instance

import (
	"slices"
	"testing"
	"time"

	"github.com/jetbpm/jetbpm/engine/model"
	"github.com/jetbpm/jetbpm/script"
)

// A Camunda 7 JavaScript script task: the variables it sets are written
// where execution.setVariable writes them (an existing variable where it
// is, a new one on the process; setVariableLocal on the task only), and
// the value of its last statement is its result variable.
func TestJavaScriptTask(t *testing.T) {
	b := model.NewBuilder("p").StartEvent("s").EndEvent("e").Sequence("s", "sub", "e")
	b.SubProcess("sub").StartEvent("ss").
		ScriptTask("init", `execution.setVariable("inSub", "fresh")`, "", model.JavaScript()).
		ScriptTask("score", `
			execution.setVariable("total", amount * 2);
			execution.setVariable("inSub", "updated");
			execution.setVariableLocal("scratch", 1);
			execution.setVariable("who", execution.getProcessInstanceId() + "/" + execution.getActivityId() + "/" + execution.getBusinessKey());
			total > 200`, "approved", model.JavaScript()).
		EndEvent("se").Sequence("ss", "init", "score", "se")
	s, _ := run(t, b, map[string]any{"amount": 120})
	assertStatus(t, s, Completed)
	assertVars(t, s.Variables(), map[string]any{
		"amount": int64(120), "total": int64(240), "approved": true, "who": "i1/score/",
		"inSub": "updated", // set first by init in the process scope, then updated there
	})
	assertNoVar(t, s.Variables(), "scratch")
}

// A script that throws, or runs over its time, is an incident at the
// task naming the script; it writes nothing.
func TestJavaScriptTaskFailures(t *testing.T) {
	for _, c := range []struct{ name, src, want string }{
		{"throws", `execution.setVariable("half", 1); null.x`, `script "t" line 1:`},
		{"runs too long", `execution.setVariable("half", 1); while (true) {}`, "ran over its 30ms time limit"},
		{"sets a function", `execution.setVariable("half", 1); execution.setVariable("f", function () {})`, "cannot be a variable"},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := model.NewBuilder("p").StartEvent("s").ScriptTask("t", c.src, "", model.JavaScript()).EndEvent("e").Sequence("s", "t", "e")
			env := newEnv(build(t, b), nil)
			env.Scripts = script.Limits{Timeout: 30 * time.Millisecond}
			s := start(t, env, nil)
			assertIncident(t, s, "t", c.want)
			assertNoVar(t, s.Variables(), "half")
		})
	}
}

// A JavaScript condition on a sequence flow: its boolean picks the flow;
// one that gives anything else, or sets a variable, is an incident at
// the gateway.
func TestJavaScriptConditions(t *testing.T) {
	gateway := func(cond string) *model.Builder {
		return model.NewBuilder("p").StartEvent("s").ExclusiveGateway("gw").
			EndEvent("high").EndEvent("low").Sequence("s", "gw").
			Flow("gw", "high", model.WhenJavaScript(cond)).DefaultFlow("gw", "low")
	}
	s, _ := run(t, gateway(`amount > 100 && execution.getBusinessKey() === ""`), map[string]any{"amount": 120})
	assertStatus(t, s, Completed)
	if !slices.Contains(s.Passed, "high") {
		t.Errorf("passed %v, want high", s.Passed)
	}
	s, _ = run(t, gateway(`amount > 100`), map[string]any{"amount": 80})
	if !slices.Contains(s.Passed, "low") {
		t.Errorf("passed %v, want low", s.Passed)
	}
	s, _ = run(t, gateway(`amount`), map[string]any{"amount": 80})
	assertIncident(t, s, "gw", "gives int64 80, want a boolean")
	s, _ = run(t, gateway(`execution.setVariable("x", 1); true`), nil)
	assertIncident(t, s, "gw", `sets variable "x": a condition only reads`)
}

// JavaScript parameters (camunda:script in camunda:inputOutput): the last
// value is the parameter's; what an input script sets is written at once
// (setVariableLocal: the activity's locals), what an output script sets is
// written with the outputs.
func TestJavaScriptMappings(t *testing.T) {
	b := model.NewBuilder("p").StartEvent("s").
		ScriptTask("t", "subtotal + bonus", "result",
			model.InputJavaScript("subtotal", `var t = 0; items.forEach(function (i) { t += i; }); execution.setVariable("counted", items.length); t`),
			model.InputJavaScript("bonus", `execution.setVariableLocal("scratch", 5); scratch * 2`),
			model.OutputJavaScript("doubled", `execution.setVariable("seenResult", result); result * 2`)).
		EndEvent("e").Sequence("s", "t", "e")
	s, _ := run(t, b, map[string]any{"items": []any{1, 2, 3}})
	assertStatus(t, s, Completed)
	assertVars(t, s.Variables(), map[string]any{
		"items": []any{int64(1), int64(2), int64(3)}, "counted": int64(3), "doubled": int64(32), "seenResult": int64(16),
	})
	assertNoVar(t, s.Variables(), "scratch", "subtotal", "bonus", "result")
}

// A JavaScript condition of a conditional catch: it waits until a write
// makes the script give true; a script that fails or gives no boolean
// does not hold, as an expression that cannot be evaluated.
func TestJavaScriptConditionalCatch(t *testing.T) {
	b := model.NewBuilder("cc")
	writers(b, "wait", 2).ConditionalCatchEvent("wait", `typeof x !== "undefined" && x > 5`, model.ConditionJavaScript()).
		EndEvent("end").Sequence("wait", "end")
	s, env := run(t, b, nil)
	waitAt(t, s, "wait")
	completeJob(t, s, env, "w1", map[string]any{"x": int64(3)})
	waitAt(t, s, "wait")
	completeJob(t, s, env, "w2", map[string]any{"x": int64(7)})
	assertStatus(t, s, Completed)

	b = model.NewBuilder("cc")
	writers(b, "wait", 1).ConditionalCatchEvent("wait", `x`, model.ConditionJavaScript()).EndEvent("end").Sequence("wait", "end")
	s, env = run(t, b, nil)
	completeJob(t, s, env, "w1", map[string]any{"x": int64(3)})
	waitAt(t, s, "wait")
}
