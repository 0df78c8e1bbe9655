package model_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jetbpm/jetbpm/engine/model"
)

// problems returns every *model.Error joined in err.
func problems(t *testing.T, err error) []*model.Error {
	t.Helper()
	var out []*model.Error
	var walk func(error)
	walk = func(e error) {
		var me *model.Error
		if errors.As(e, &me) && e == error(me) {
			out = append(out, me)
			return
		}
		if j, ok := e.(interface{ Unwrap() []error }); ok {
			for _, x := range j.Unwrap() {
				walk(x)
			}
			return
		}
		t.Errorf("problem %T %v is not a *model.Error", e, e)
	}
	walk(err)
	return out
}

// set is a NodeOption that edits a node directly, for states the builder
// does not produce.
func set(f func(*model.Node)) model.NodeOption { return f }

func worker(topic string) model.NodeOption {
	return set(func(n *model.Node) {
		if n.Service == nil {
			n.Service = &model.Service{}
		}
		n.Service.Worker = &model.Worker{Topic: topic}
	})
}

// chain builds s -> t -> e around the task added by task.
func chain(task func(b *model.Builder)) *model.Builder {
	b := model.NewBuilder("p").StartEvent("s")
	task(b)
	return b.EndEvent("e").Sequence("s", "t", "e")
}

func TestValidProcessBuilds(t *testing.T) {
	b := model.NewBuilder("order").Name("Order")
	b.StartEvent("start", model.Output("received", "true"))
	b.ServiceTask("charge", "payments.charge", model.Timeout(5*time.Second), model.Input("amt", "amount"), model.Output("paid", "ok"))
	b.ErrorBoundary("declined", "charge", "DECLINED")
	b.TimerBoundary("slow", "charge", model.Duration("PT1M"), false)
	b.ExclusiveGateway("big?")
	b.ScriptTask("mark", `"big"`, "size")
	b.ParallelGateway("fork")
	b.ParallelGateway("join")
	b.ManualTask("a")
	b.ServiceTask("b", "", worker("jobs"))
	sub := b.SubProcess("sub")
	sub.StartEvent("sub_s").TimerCatchEvent("sub_wait", model.Cycle("R2/PT1S"), model.Output("waited", "true")).EndEvent("sub_e").Sequence("sub_s", "sub_wait", "sub_e")
	b.EndEvent("end")
	b.ErrorEndEvent("failed", "DECLINED")
	b.TerminateEndEvent("slow_end")
	b.Sequence("start", "charge", "big?")
	b.Flow("big?", "mark", model.When("amount > 1000"))
	b.DefaultFlow("big?", "fork")
	b.Flow("mark", "fork")
	b.Flow("fork", "a").Flow("fork", "b").Flow("a", "join").Flow("b", "join")
	b.Sequence("join", "sub", "end")
	b.Flow("declined", "failed")
	b.Flow("slow", "slow_end")
	p, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	if !p.Validated() || p.Name != "Order" {
		t.Fatalf("built process: validated %v, name %q", p.Validated(), p.Name)
	}
	if f := p.Outgoing("big?")[0]; f.Compiled() == nil {
		t.Error("condition not compiled")
	}
	if p.Node("mark").Script.Compiled() == nil || p.Node("charge").Inputs[0].Compiled() == nil || p.Node("start").Outputs[0].Compiled() == nil {
		t.Error("script or mappings not compiled")
	}
	if p.Node("charge").Service.Timeout != 5*time.Second || p.Node("charge").IsExternal() || !p.Node("b").IsExternal() {
		t.Error("service options lost")
	}
	if f := p.Flow(p.Node("big?").Default); f == nil || f.Target != "fork" || f.Compiled() != nil {
		t.Errorf("default flow = %+v", f)
	}
	if n := p.Node("sub_wait"); n.Scope != "sub" || !n.Timer.Repeats() {
		t.Errorf("sub-process node = %+v", n)
	}
}

func TestValidationRules(t *testing.T) {
	tests := []struct {
		name    string
		b       func() *model.Builder
		element string
		msg     string
	}{
		{"duplicate node ids", func() *model.Builder {
			return model.NewBuilder("p").StartEvent("s").Task("x").Task("x").EndEvent("e").Sequence("s", "x", "e")
		}, "x", "used twice"},
		{"node and flow share an id", func() *model.Builder {
			return model.NewBuilder("p").StartEvent("s").Task("x").EndEvent("e").Flow("s", "x").Flow("x", "e", model.FlowID("x"))
		}, "x", "used twice"},
		{"empty node id", func() *model.Builder {
			return model.NewBuilder("p").StartEvent("s").Task("").EndEvent("e").Sequence("s", "e")
		}, "", "has no id"},
		{"node id used twice", func() *model.Builder {
			return model.NewBuilder("p").StartEvent("s").Task("s").EndEvent("e").Sequence("s", "e")
		}, "s", `id "s" is used twice`},
		{"no none start", func() *model.Builder {
			return model.NewBuilder("p").Task("a").EndEvent("e").Flow("a", "e")
		}, "", "has no none start event"},
		{"sub-process without start", func() *model.Builder {
			b := model.NewBuilder("p").StartEvent("s")
			b.SubProcess("sp").Task("in").EndEvent("in_e").Flow("in", "in_e")
			return b.EndEvent("e").Sequence("s", "sp", "e")
		}, "sp", "no none start event inside"},
		{"flow to unknown node", func() *model.Builder {
			return chain(func(b *model.Builder) { b.Task("t") }).Flow("t", "ghost", model.FlowID("f"))
		}, "f", `"ghost"`},
		{"flow from unknown node", func() *model.Builder {
			return chain(func(b *model.Builder) { b.Task("t") }).Flow("ghost", "t", model.FlowID("f"))
		}, "f", `"ghost"`},
		{"flow crosses a sub-process boundary", func() *model.Builder {
			b := model.NewBuilder("p").StartEvent("s")
			b.SubProcess("sp").StartEvent("in_s").Task("in").EndEvent("in_e").Sequence("in_s", "in", "in_e")
			return b.EndEvent("e").Sequence("s", "sp", "e").Flow("s", "in", model.FlowID("cross"))
		}, "cross", "crosses a sub-process boundary"},
		{"node in an unknown scope", func() *model.Builder {
			return chain(func(b *model.Builder) { b.Task("t", set(func(n *model.Node) { n.Scope = "nowhere" })) })
		}, "t", `"nowhere"`},
		{"end event with outgoing flow", func() *model.Builder {
			return chain(func(b *model.Builder) { b.Task("t") }).Task("after").Flow("e", "after")
		}, "e", "has outgoing sequence flows"},
		{"start event with incoming flow", func() *model.Builder {
			return chain(func(b *model.Builder) { b.Task("t") }).Flow("t", "s")
		}, "s", "has incoming sequence flows"},
		{"exclusive gateway without outgoing flow", func() *model.Builder {
			return chain(func(b *model.Builder) { b.Task("t") }).ExclusiveGateway("g").Flow("t", "g")
		}, "g", "has no outgoing sequence flow"},
		{"parallel gateway without outgoing flow", func() *model.Builder {
			return chain(func(b *model.Builder) { b.Task("t") }).ParallelGateway("g").Flow("t", "g")
		}, "g", "has no outgoing sequence flow"},
		{"default flow not outgoing", func() *model.Builder {
			return model.NewBuilder("p").StartEvent("s").ExclusiveGateway("g", set(func(n *model.Node) { n.Default = "in" })).EndEvent("e").
				Flow("s", "g", model.FlowID("in")).Flow("g", "e")
		}, "g", `default flow "in" is not one of its outgoing flows`},
		{"default flow unknown", func() *model.Builder {
			return model.NewBuilder("p").StartEvent("s").ExclusiveGateway("g", set(func(n *model.Node) { n.Default = "nope" })).EndEvent("e").
				Sequence("s", "g", "e")
		}, "g", `default flow "nope"`},
		{"default flow with a condition", func() *model.Builder {
			return model.NewBuilder("p").StartEvent("s").ExclusiveGateway("g").EndEvent("e").Task("t").
				Flow("s", "g").Flow("g", "t", model.When("x > 1")).DefaultFlow("g", "e", model.When("x <= 1"), model.FlowID("d")).Flow("t", "e")
		}, "g", `default flow "d" must not have a condition`},
		{"condition out of a parallel gateway", func() *model.Builder {
			return model.NewBuilder("p").StartEvent("s").ParallelGateway("g").EndEvent("e").
				Flow("s", "g").Flow("g", "e", model.When("x > 1"), model.FlowID("fc"))
		}, "fc", `parallel gateway "g"`},
		{"bad condition expression", func() *model.Builder {
			return model.NewBuilder("p").StartEvent("s").ExclusiveGateway("g").EndEvent("e").
				Flow("s", "g").Flow("g", "e", model.When("x > > ("), model.FlowID("fc"))
		}, "fc", "condition"},
		{"script without expression", func() *model.Builder {
			return chain(func(b *model.Builder) { b.ScriptTask("t", "  ", "r") })
		}, "t", "no script expression"},
		{"bad script expression", func() *model.Builder {
			return chain(func(b *model.Builder) { b.ScriptTask("t", "1 +", "r") })
		}, "t", "script"},
		{"service task with neither op nor worker", func() *model.Builder {
			return chain(func(b *model.Builder) { b.ServiceTask("t", "") })
		}, "t", "neither"},
		{"service task without service", func() *model.Builder {
			return chain(func(b *model.Builder) { b.ServiceTask("t", "", set(func(n *model.Node) { n.Service = nil })) })
		}, "t", "neither"},
		{"service task with op and worker", func() *model.Builder {
			return chain(func(b *model.Builder) { b.ServiceTask("t", "op", worker("jobs")) })
		}, "t", `both an in-process operation "op" and an external worker topic "jobs"`},
		{"service task with empty worker topic", func() *model.Builder {
			return chain(func(b *model.Builder) { b.ServiceTask("t", "", worker(" ")) })
		}, "t", "empty topic"},
		{"negative timeout", func() *model.Builder {
			return chain(func(b *model.Builder) { b.ServiceTask("t", "op", model.Timeout(-time.Second)) })
		}, "t", "negative"},
		{"timeout with a worker", func() *model.Builder {
			return chain(func(b *model.Builder) { b.ServiceTask("t", "", worker("jobs"), model.Timeout(time.Second)) })
		}, "t", "in-process operations only"},
		{"boundary attached to unknown node", func() *model.Builder {
			return chain(func(b *model.Builder) { b.Task("t") }).ErrorBoundary("b", "ghost", "").Flow("b", "e")
		}, "b", `"ghost", which does not exist`},
		{"boundary attached to a gateway", func() *model.Builder {
			return model.NewBuilder("p").StartEvent("s").ExclusiveGateway("g").EndEvent("e").Sequence("s", "g", "e").
				TimerBoundary("b", "g", model.Duration("PT1M"), true).Flow("b", "e")
		}, "b", "attach to activities"},
		{"boundary attached to an event", func() *model.Builder {
			return chain(func(b *model.Builder) { b.Task("t") }).ErrorBoundary("b", "s", "").Flow("b", "e")
		}, "b", "attach to activities"},
		{"boundary in another scope", func() *model.Builder {
			b := model.NewBuilder("p").StartEvent("s")
			b.SubProcess("sp").StartEvent("in_s").Task("in").EndEvent("in_e").Sequence("in_s", "in", "in_e")
			return b.EndEvent("e").Sequence("s", "sp", "e").ErrorBoundary("b", "in", "").Flow("b", "e")
		}, "b", `"in" in another scope`},
		{"non-interrupting error boundary", func() *model.Builder {
			return chain(func(b *model.Builder) { b.Task("t") }).
				ErrorBoundary("b", "t", "E", set(func(n *model.Node) { n.Interrupting = false })).Flow("b", "e")
		}, "b", "always interrupting"},
		{"boundary without event definition", func() *model.Builder {
			return chain(func(b *model.Builder) { b.Task("t") }).
				ErrorBoundary("b", "t", "E", set(func(n *model.Node) { n.Event = model.NoneEvent })).Flow("b", "e")
		}, "b", "only error, timer, message, escalation, signal, conditional, compensation and cancel boundary events"},
		{"boundary with an incoming flow", func() *model.Builder {
			return chain(func(b *model.Builder) { b.Task("t") }).ErrorBoundary("b", "t", "").Task("x").
				Flow("b", "e").Flow("s", "x").Flow("x", "b")
		}, "b", "cannot have incoming"},
		{"boundary without outgoing flow", func() *model.Builder {
			return chain(func(b *model.Builder) { b.Task("t") }).ErrorBoundary("b", "t", "")
		}, "b", "has no outgoing sequence flow"},
		{"timer catch without definition", func() *model.Builder {
			return chain(func(b *model.Builder) {
				b.TimerCatchEvent("t", model.Duration("PT1S"), set(func(n *model.Node) { n.Timer = nil }))
			})
		}, "t", "no timer definition"},
		{"timer boundary without definition", func() *model.Builder {
			return chain(func(b *model.Builder) { b.Task("t") }).
				TimerBoundary("b", "t", model.Duration("PT1S"), true, set(func(n *model.Node) { n.Timer = nil })).Flow("b", "e")
		}, "b", "no timer definition"},
		{"bad ISO duration", func() *model.Builder {
			return chain(func(b *model.Builder) { b.TimerCatchEvent("t", model.Duration("PT5X")) })
		}, "t", `"PT5X"`},
		{"bad boundary cycle", func() *model.Builder {
			return chain(func(b *model.Builder) { b.Task("t") }).TimerBoundary("b", "t", model.Cycle("R0/PT1M"), false).Flow("b", "e")
		}, "b", `"R0/PT1M"`},
		{"intermediate catch without timer", func() *model.Builder {
			return chain(func(b *model.Builder) {
				b.TimerCatchEvent("t", model.Duration("PT1S"), set(func(n *model.Node) { n.Event = model.ErrorEvent }))
			})
		}, "t", "only timer, message, signal, conditional and link intermediate catch events"},
		{"timer on a task", func() *model.Builder {
			return chain(func(b *model.Builder) {
				b.Task("t", set(func(n *model.Node) { n.Timer = &model.Timer{Type: model.TimerDuration, Value: "PT1S"} }))
			})
		}, "t", "can have a timer"},
		{"timer start event without a timer", func() *model.Builder {
			return chain(func(b *model.Builder) { b.Task("t") }).StartEvent("s2", set(func(n *model.Node) { n.Event = model.TimerEvent })).Flow("s2", "t")
		}, "s2", "has no timer definition"},
		{"two timer start events", func() *model.Builder {
			return chain(func(b *model.Builder) { b.Task("t") }).
				TimerStartEvent("s2", model.Cycle("R/PT1H")).TimerStartEvent("s3", model.Date("2030-01-01T00:00:00Z")).Flow("s2", "t").Flow("s3", "t")
		}, "s3", `a process has at most one timer start event; "s2" is already one`},
		{"five-field cron timer start event", func() *model.Builder {
			return chain(func(b *model.Builder) { b.Task("t") }).TimerStartEvent("s2", model.Cycle("0 9 * * ?")).Flow("s2", "t")
		}, "s2", `cron expression "0 9 * * ?" (Spring): has 5 fields, want 6 fields`},
		{"unknown node kind", func() *model.Builder {
			return chain(func(b *model.Builder) { b.Task("t", set(func(n *model.Node) { n.Kind = "complexGateway" })) })
		}, "t", "unknown node kind"},
		{"input mapping on an event", func() *model.Builder {
			return chain(func(b *model.Builder) { b.TimerCatchEvent("t", model.Duration("PT1S"), model.Input("x", "1")) })
		}, "t", "only activities, none intermediate throw events, signal throws and message throws that run a job have input mappings"},
		{"input mapping on an end event", func() *model.Builder {
			return model.NewBuilder("p").StartEvent("s").EndEvent("e", model.Input("x", "1")).Flow("s", "e")
		}, "e", "only activities, none intermediate throw events, signal throws and message throws that run a job have input mappings"},
		{"output mapping on an end event", func() *model.Builder {
			return model.NewBuilder("p").StartEvent("s").EndEvent("e", model.Output("x", "1")).Flow("s", "e")
		}, "e", "output mappings"},
		{"output mapping on a gateway", func() *model.Builder {
			return model.NewBuilder("p").StartEvent("s").ExclusiveGateway("g", model.Output("x", "1")).EndEvent("e").Sequence("s", "g", "e")
		}, "g", "output mappings"},
		{"nested mapping target with an empty part", func() *model.Builder {
			return chain(func(b *model.Builder) { b.Task("t", model.Input("a..b", "1")) })
		}, "t", `input mapping target "a..b" is not a variable name`},
		{"nested mapping target ending in a dot", func() *model.Builder {
			return chain(func(b *model.Builder) { b.Task("t", model.Output("a.", "1")) })
		}, "t", `output mapping target "a." is not a variable name`},
		{"mapping target starting with a digit", func() *model.Builder {
			return chain(func(b *model.Builder) { b.Task("t", model.Output("1a", "1")) })
		}, "t", `output mapping target "1a"`},
		{"empty mapping target", func() *model.Builder {
			return chain(func(b *model.Builder) { b.Task("t", model.Output("", "1")) })
		}, "t", `output mapping target ""`},
		{"bad mapping source", func() *model.Builder {
			return chain(func(b *model.Builder) { b.Task("t", model.Input("x", "1 +")) })
		}, "t", "input mapping x"},
		{"process id with whitespace", func() *model.Builder {
			return model.NewBuilder("my process").StartEvent("s").EndEvent("e").Flow("s", "e")
		}, "", "process id"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := tt.b().Build()
			if err == nil {
				t.Fatalf("Build succeeded (%d nodes), want a problem with %q", len(p.Nodes), tt.element)
			}
			if p != nil {
				t.Error("Build returned a process with its error")
			}
			var first *model.Error
			if !errors.As(err, &first) {
				t.Fatalf("error %v holds no *model.Error", err)
			}
			ps := problems(t, err)
			for _, e := range ps {
				if e.Element == tt.element && strings.Contains(e.Msg, tt.msg) {
					if !strings.Contains(e.Error(), fmt.Sprintf("process %q", e.Process)) {
						t.Errorf("Error() = %q does not name the process", e.Error())
					}
					return
				}
			}
			t.Errorf("no problem on element %q containing %q; got:\n%v", tt.element, tt.msg, err)
		})
	}
}

func TestOutputMappingOnStartEventAllowed(t *testing.T) {
	for _, kind := range []string{"start", "timer catch", "boundary"} {
		b := model.NewBuilder("p")
		switch kind {
		case "start":
			b.StartEvent("s", model.Output("x", "1")).EndEvent("e").Flow("s", "e")
		case "timer catch":
			b.StartEvent("s").TimerCatchEvent("t", model.Duration("PT1S"), model.Output("x", "1")).EndEvent("e").Sequence("s", "t", "e")
		case "boundary":
			b.StartEvent("s").Task("t").EndEvent("e").Sequence("s", "t", "e").
				TimerBoundary("b", "t", model.Duration("PT1S"), true, model.Output("x", "1")).Flow("b", "e")
		}
		if _, err := b.Build(); err != nil {
			t.Errorf("output mapping on a %s event: %v", kind, err)
		}
	}
}

// The builder's options that do not apply to a node's kind are reported
// by Build (NodeOption's doc): a Timeout on a plain task is one.
func TestTimeoutOnNonServiceTaskRefused(t *testing.T) {
	for _, add := range []func(*model.Builder){
		func(b *model.Builder) { b.Task("t", model.Timeout(time.Second)) },
		func(b *model.Builder) { b.ScriptTask("t", "1", "r", model.Timeout(time.Second)) },
	} {
		p, err := chain(add).Build()
		if err == nil {
			t.Errorf("node %s with Timeout built; want a problem naming it (service = %+v)", p.Node("t").Kind, p.Node("t").Service)
		}
	}
}

func TestErrorText(t *testing.T) {
	tests := []struct {
		e    model.Error
		want string
	}{
		{model.Error{Process: "p", Element: "x", Line: 12, Msg: "boom"}, `process "p": element "x" (line 12): boom`},
		{model.Error{Process: "p", Element: "x", Msg: "boom"}, `process "p": element "x": boom`},
		{model.Error{Process: "p", Msg: "boom"}, `process "p": boom`},
		{model.Error{Process: "p", Line: 3, Msg: "boom"}, `process "p" (line 3): boom`},
	}
	for _, tt := range tests {
		if got := tt.e.Error(); got != tt.want {
			t.Errorf("Error() = %q, want %q", got, tt.want)
		}
	}

	// A validation problem on an element with a line shows it.
	_, err := chain(func(b *model.Builder) {
		b.ScriptTask("t", " ", "r", set(func(n *model.Node) { n.Line = 12 }))
	}).Build()
	if want := `process "p": element "t" (line 12): scriptTask: has no script expression`; err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("error = %v, want prefix %q", err, want)
	}
	var me *model.Error
	if !errors.As(err, &me) || me.Line != 12 || me.Process != "p" || me.Element != "t" {
		t.Errorf("*Error = %+v", me)
	}
	// Flows carry their line too.
	b := model.NewBuilder("p").StartEvent("s").EndEvent("e").Flow("s", "e").Flow("s", "ghost", model.FlowID("f"), func(f *model.Flow) { f.Line = 7 })
	if _, err := b.Build(); err == nil || !strings.Contains(err.Error(), `element "f" (line 7)`) {
		t.Errorf("flow error = %v", err)
	}
}

func TestValidateAtMostTwentyProblems(t *testing.T) {
	b := model.NewBuilder("p").StartEvent("s").EndEvent("e").Flow("s", "e")
	for i := range 30 {
		b.ScriptTask(fmt.Sprintf("t%02d", i), " ", "r")
	}
	_, err := b.Build()
	if err == nil {
		t.Fatal("Build succeeded")
	}
	ps := problems(t, err)
	if len(ps) != 20 {
		t.Fatalf("%d problems, want 20", len(ps))
	}
	for i, e := range ps {
		if want := fmt.Sprintf("t%02d", i); e.Element != want {
			t.Errorf("problem %d names %q, want %q (declaration order)", i, e.Element, want)
		}
	}
}

func TestValidateIdempotent(t *testing.T) {
	p, err := chain(func(b *model.Builder) { b.ScriptTask("t", "x + 1", "y") }).Build()
	if err != nil {
		t.Fatal(err)
	}
	before := p.Node("t").Script.Compiled()
	for range 2 {
		if err := p.Validate(); err != nil {
			t.Fatalf("revalidating: %v", err)
		}
	}
	if !p.Validated() || p.Node("t").Script.Compiled() == nil || before == nil {
		t.Error("revalidated process lost its compiled script")
	}
	if got := p.Outgoing("s"); len(got) != 1 || got[0].Target != "t" {
		t.Errorf("Outgoing(s) after revalidation = %v", got)
	}

	bad := &model.Process{ID: "p", Nodes: []*model.Node{
		{ID: "t", Kind: model.ScriptTask, Script: &model.Script{Expression: "1"}},
		{ID: "g", Kind: model.ExclusiveGateway},
	}}
	first := bad.Validate()
	second := bad.Validate()
	if first == nil || second == nil || first.Error() != second.Error() {
		t.Errorf("Validate twice:\n%v\n---\n%v", first, second)
	}
}

// Problems come out in a stable order, so that the same definition always
// gives the same report (and the same 20 when there are more).
func TestValidateDeterministicOrder(t *testing.T) {
	p := &model.Process{ID: "p"}
	for i := range 6 {
		p.Nodes = append(p.Nodes, &model.Node{ID: fmt.Sprintf("sp%d", i), Kind: model.SubProcess})
	}
	want := p.Validate()
	if want == nil {
		t.Fatal("validated")
	}
	for range 50 {
		if got := p.Validate(); got.Error() != want.Error() {
			t.Fatalf("Validate is not deterministic:\n%v\n---\n%v", want, got)
		}
	}
}

func TestValidatedFalseAfterFailedValidate(t *testing.T) {
	p, err := chain(func(b *model.Builder) { b.Task("t") }).Build()
	if err != nil {
		t.Fatal(err)
	}
	if !p.Validated() {
		t.Fatal("built process not validated")
	}
	p.Flows = append(p.Flows, &model.Flow{ID: "bad", Source: "t", Target: "ghost"})
	if err := p.Validate(); err == nil {
		t.Fatal("Validate accepted a flow to an unknown node")
	}
	if p.Validated() {
		t.Error("Validated() true after a failed Validate")
	}
	// Fixing it makes it usable again.
	p.Flows = p.Flows[:len(p.Flows)-1]
	if err := p.Validate(); err != nil || !p.Validated() {
		t.Errorf("revalidating the fixed process: %v", err)
	}
	var zero model.Process
	if zero.Validated() {
		t.Error("zero Process is validated")
	}
}

func ids[T any](xs []T, id func(T) string) []string {
	out := []string{}
	for _, x := range xs {
		out = append(out, id(x))
	}
	return out
}

func flowIDs(fs []*model.Flow) []string { return ids(fs, func(f *model.Flow) string { return f.ID }) }
func nodeIDs(ns []*model.Node) []string { return ids(ns, func(n *model.Node) string { return n.ID }) }

// lookupProcess has fan-out and fan-in in declaration order, a sub-process
// with its own start, and two boundaries on one task.
func lookupProcess(t *testing.T) *model.Process {
	t.Helper()
	b := model.NewBuilder("p")
	b.StartEvent("s").ParallelGateway("fork").Task("a").Task("b").Task("c").ParallelGateway("join")
	sub := b.SubProcess("sp")
	sub.StartEvent("sp_s").Task("sp_t").EndEvent("sp_e").Sequence("sp_s", "sp_t", "sp_e")
	b.EndEvent("e").EndEvent("late").EndEvent("failed")
	b.Flow("s", "fork", model.FlowID("f0"))
	b.Flow("fork", "c", model.FlowID("f3")).Flow("fork", "a", model.FlowID("f1")).Flow("fork", "b", model.FlowID("f2"))
	b.Flow("b", "join", model.FlowID("j2")).Flow("c", "join", model.FlowID("j3")).Flow("a", "join", model.FlowID("j1"))
	b.Flow("join", "sp", model.FlowID("f4")).Flow("sp", "e", model.FlowID("f5"))
	b.TimerBoundary("timeout", "a", model.Duration("PT1M"), true).ErrorBoundary("oops", "a", "")
	b.TimerBoundary("sp_timeout", "sp", model.Duration("PT1H"), false)
	b.Flow("timeout", "late").Flow("oops", "failed").Flow("sp_timeout", "late")
	p, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func checkLookups(t *testing.T, p *model.Process) {
	t.Helper()
	if got := flowIDs(p.Outgoing("fork")); !slices.Equal(got, []string{"f3", "f1", "f2"}) {
		t.Errorf("Outgoing(fork) = %v", got)
	}
	if got := flowIDs(p.Incoming("join")); !slices.Equal(got, []string{"j2", "j3", "j1"}) {
		t.Errorf("Incoming(join) = %v", got)
	}
	if got := flowIDs(p.Outgoing("e")); len(got) != 0 {
		t.Errorf("Outgoing(e) = %v", got)
	}
	if got := flowIDs(p.Incoming("late")); len(got) != 2 {
		t.Errorf("Incoming(late) = %v", got)
	}
	if n := p.StartOf(""); n == nil || n.ID != "s" {
		t.Errorf("StartOf(\"\") = %v", n)
	}
	if n := p.StartOf("sp"); n == nil || n.ID != "sp_s" {
		t.Errorf("StartOf(sp) = %v", n)
	}
	if n := p.StartOf("a"); n != nil {
		t.Errorf("StartOf(a) = %v, want nil", n)
	}
	if got := nodeIDs(p.Boundaries("a")); !slices.Equal(got, []string{"timeout", "oops"}) {
		t.Errorf("Boundaries(a) = %v", got)
	}
	if got := nodeIDs(p.Boundaries("sp")); !slices.Equal(got, []string{"sp_timeout"}) {
		t.Errorf("Boundaries(sp) = %v", got)
	}
	if got := p.Boundaries("b"); len(got) != 0 {
		t.Errorf("Boundaries(b) = %v", nodeIDs(got))
	}
	if n := p.Node("sp_t"); n == nil || n.Scope != "sp" || n.Kind != model.Task {
		t.Errorf("Node(sp_t) = %+v", n)
	}
	if p.Node("ghost") != nil || p.Flow("ghost") != nil {
		t.Error("lookup of an unknown id is not nil")
	}
	if f := p.Flow("f1"); f == nil || f.Source != "fork" || f.Target != "a" {
		t.Errorf("Flow(f1) = %+v", f)
	}
	due, ok := p.Node("timeout").Timer.Due(armed, 0)
	if !ok || !due.Equal(armed.Add(time.Minute)) {
		t.Errorf("boundary timer Due = %v, %v", due, ok)
	}
	if !p.Node("oops").Interrupting || p.Node("sp_timeout").Interrupting {
		t.Error("interrupting flags lost")
	}
}

func TestLookups(t *testing.T) {
	checkLookups(t, lookupProcess(t))
}

// decoded copies a process through its exported fields only, as a decoder
// of the stored form would: nothing compiled or parsed survives.
func decoded(p *model.Process) *model.Process {
	out := &model.Process{ID: p.ID, Name: p.Name, Version: p.Version}
	for _, n := range p.Nodes {
		c := *n
		if n.Timer != nil {
			c.Timer = &model.Timer{Type: n.Timer.Type, Value: n.Timer.Value}
		}
		if n.Script != nil {
			c.Script = &model.Script{Expression: n.Script.Expression, ResultVariable: n.Script.ResultVariable}
		}
		if n.Service != nil {
			s := *n.Service
			c.Service = &s
		}
		c.Inputs = nil
		for _, m := range n.Inputs {
			c.Inputs = append(c.Inputs, model.Mapping{Target: m.Target, Source: m.Source})
		}
		c.Outputs = nil
		for _, m := range n.Outputs {
			c.Outputs = append(c.Outputs, model.Mapping{Target: m.Target, Source: m.Source})
		}
		out.Nodes = append(out.Nodes, &c)
	}
	for _, f := range p.Flows {
		out.Flows = append(out.Flows, &model.Flow{ID: f.ID, Name: f.Name, Source: f.Source, Target: f.Target, Condition: f.Condition, Line: f.Line})
	}
	return out
}

func TestDecodedCopyRevalidates(t *testing.T) {
	p := lookupProcess(t)
	c := decoded(p)
	if c.Validated() {
		t.Fatal("copy is validated before Validate")
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	checkLookups(t, c)
	if c.Node("a") == p.Node("a") {
		t.Error("copy shares nodes with the original")
	}

	// Compiled parts are rebuilt too.
	b := model.NewBuilder("p").StartEvent("s").ExclusiveGateway("g").ScriptTask("t", "x * 2", "y", model.Input("x", "a")).
		TimerCatchEvent("w", model.Cycle("R2/2026-01-01T00:00:00Z/PT1H")).EndEvent("e")
	b.Flow("s", "g").Flow("g", "t", model.When("a > 1"), model.FlowID("big")).DefaultFlow("g", "e").Sequence("t", "w", "e")
	orig, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	c = decoded(orig)
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if c.Flow("big").Compiled() == nil || c.Node("t").Script.Compiled() == nil || c.Node("t").Inputs[0].Compiled() == nil {
		t.Error("copy's expressions not compiled by Validate")
	}
	if c.Flow(c.Node("g").Default) == nil {
		t.Error("copy's default flow lost")
	}
	d1, _ := orig.Node("w").Timer.Due(armed, 1)
	d2, ok := c.Node("w").Timer.Due(armed, 1)
	if !ok || !d1.Equal(d2) || !d2.Equal(time.Date(2026, 1, 1, 2, 0, 0, 0, time.UTC)) {
		t.Errorf("copy's timer Due = %v, %v; original %v", d2, ok, d1)
	}
}
