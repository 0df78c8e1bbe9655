package model_test

import (
	"strings"
	"testing"
	"time"

	"github.com/jetbpm/jetbpm/engine/model"
)

// gateway builds s -> g -> (a | b) -> e around an event-based gateway, with
// the branch targets added by branches.
func gateway(branches func(b *model.Builder)) *model.Builder {
	b := model.NewBuilder("p").StartEvent("s").EventBasedGateway("g")
	branches(b)
	return b.EndEvent("e").Flow("s", "g").Flow("g", "a").Flow("g", "b").Flow("a", "e").Flow("b", "e")
}

func publish(key string) model.NodeOption {
	return model.WithPublish(model.Publish{CorrelationKey: key})
}

func TestMessageElementsBuild(t *testing.T) {
	b := model.NewBuilder("msgs")
	b.MessageStartEvent("ms", "order-placed", model.Output("order", "orderId"))
	b.StartEvent("s")
	b.ReceiveTask("recv", "approved", "orderId", model.Input("x", "1"), model.Output("ok", "approved"))
	b.MessageBoundary("cancel", "recv", "cancelled", "orderId", true)
	b.MessageBoundary("ping", "recv", "pinged", "orderId", false)
	b.EventBasedGateway("g")
	b.MessageCatchEvent("paid", "paid", "=orderId")
	b.TimerCatchEvent("late", model.Duration("PT1H"))
	b.ReceiveTask("later", "", "orderId", model.MessageNameExpr(`"late-" + orderId`))
	b.ThrowEvent("mark")
	b.MessageThrowEvent("notify", "notified", model.WithPublish(model.Publish{
		CorrelationKey: "orderId", MessageID: `"n-" + orderId`, TTL: time.Minute,
		Variables: []model.Mapping{{Target: "order", Source: "orderId"}},
	}))
	b.SendTask("send", "sent", worker("mail"))
	b.MessageEndEvent("done", "done", publish(""))
	b.EndEvent("cancelled_end").EndEvent("ping_end")
	b.Flow("ms", "recv").Flow("s", "recv").Flow("recv", "g").Flow("g", "paid").Flow("g", "late").Flow("g", "later")
	b.Flow("paid", "mark").Flow("late", "mark").Flow("later", "mark")
	b.Sequence("mark", "notify", "send", "done")
	b.Flow("cancel", "cancelled_end").Flow("ping", "ping_end")
	p, err := b.Build()
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	if ms := p.MessageStarts(); len(ms) != 1 || ms[0].ID != "ms" {
		t.Errorf("MessageStarts = %v", ms)
	}
	if p.Node("paid").Message.KeyCompiled() == nil || p.Node("later").Message.NameCompiled() == nil {
		t.Error("key or name expression not compiled")
	}
	if pub := p.Node("notify").Publish; pub.KeyCompiled() == nil || pub.IDCompiled() == nil || pub.Variables[0].Compiled() == nil {
		t.Error("publish expressions not compiled")
	}
}

func TestMessageValidationRules(t *testing.T) {
	noMessage := set(func(n *model.Node) { n.Message = nil })
	tests := []struct {
		name    string
		b       func() *model.Builder
		element string
		msg     string
	}{
		{"catch without a message", func() *model.Builder {
			return chain(func(b *model.Builder) { b.MessageCatchEvent("t", "m", "k", noMessage) })
		}, "t", "has no message"},
		{"receive task without a name", func() *model.Builder {
			return chain(func(b *model.Builder) { b.ReceiveTask("t", " ", "k") })
		}, "t", "message has no name"},
		{"bad name expression", func() *model.Builder {
			return chain(func(b *model.Builder) { b.MessageCatchEvent("t", "", "k", model.MessageNameExpr("1 +")) })
		}, "t", "message name"},
		{"bad correlation key", func() *model.Builder {
			return chain(func(b *model.Builder) { b.MessageCatchEvent("t", "m", "k +") })
		}, "t", "correlation key"},
		{"message start with a key", func() *model.Builder {
			return chain(func(b *model.Builder) { b.Task("t") }).
				MessageStartEvent("ms", "m", set(func(n *model.Node) { n.Message.CorrelationKey = "k" })).Flow("ms", "t")
		}, "ms", "a message start event has no correlation key"},
		{"message throw with a message key", func() *model.Builder {
			return chain(func(b *model.Builder) {
				b.MessageThrowEvent("t", "m", publish("k"), set(func(n *model.Node) { n.Message.CorrelationKey = "k" }))
			})
		}, "t", "correlation key is its publish's"},
		{"message start in a sub-process", func() *model.Builder {
			b := model.NewBuilder("p").StartEvent("s")
			b.SubProcess("sp").StartEvent("in_s").MessageStartEvent("in_ms", "m").Task("in").EndEvent("in_e").
				Sequence("in_s", "in", "in_e").Flow("in_ms", "in")
			return b.EndEvent("e").Sequence("s", "sp", "e")
		}, "in_ms", "process level only"},
		{"message start with a name expression", func() *model.Builder {
			return chain(func(b *model.Builder) { b.Task("t") }).
				MessageStartEvent("ms", "", model.MessageNameExpr(`"m"`)).Flow("ms", "t")
		}, "ms", "must be a literal"},
		{"two message starts for one message", func() *model.Builder {
			return chain(func(b *model.Builder) { b.Task("t") }).
				MessageStartEvent("ms1", "m").MessageStartEvent("ms2", "m").Flow("ms1", "t").Flow("ms2", "t")
		}, "ms2", `"ms1" is already the start event for message "m"`},
		{"only message starts, none of them valid", func() *model.Builder {
			return model.NewBuilder("p").MessageStartEvent("ms", "", set(func(n *model.Node) { n.Event = model.ErrorEvent })).
				Task("t").EndEvent("e").Sequence("ms", "t", "e")
		}, "", "no none start event and no message, signal or timer start event"},
		{"throw with a job and a publish", func() *model.Builder {
			return chain(func(b *model.Builder) { b.SendTask("t", "m", worker("mail"), publish("")) })
		}, "t", "both runs a job and publishes"},
		{"throw with neither job nor publish", func() *model.Builder {
			return chain(func(b *model.Builder) { b.MessageThrowEvent("t", "m") })
		}, "t", "neither runs a job"},
		{"message end event with neither", func() *model.Builder {
			return model.NewBuilder("p").StartEvent("s").MessageEndEvent("e", "m").Flow("s", "e")
		}, "e", "neither runs a job"},
		{"send task's worker checked as a service task's", func() *model.Builder {
			return chain(func(b *model.Builder) { b.SendTask("t", "m", worker(" ")) })
		}, "t", "empty topic"},
		{"publish without a message name", func() *model.Builder {
			return chain(func(b *model.Builder) { b.SendTask("t", "", publish("")) })
		}, "t", "message has no name"},
		{"bad publish key", func() *model.Builder {
			return chain(func(b *model.Builder) { b.SendTask("t", "m", publish("k +")) })
		}, "t", "publish correlation key"},
		{"bad publish id", func() *model.Builder {
			return chain(func(b *model.Builder) { b.SendTask("t", "m", model.WithPublish(model.Publish{MessageID: "1 +"})) })
		}, "t", "publish message id"},
		{"negative publish ttl", func() *model.Builder {
			return chain(func(b *model.Builder) { b.SendTask("t", "m", model.WithPublish(model.Publish{TTL: -time.Second})) })
		}, "t", "time to live -1s is negative"},
		{"bad publish variable target", func() *model.Builder {
			return chain(func(b *model.Builder) {
				b.SendTask("t", "m", model.WithPublish(model.Publish{Variables: []model.Mapping{{Target: "a.b", Source: "1"}}}))
			})
		}, "t", `publish variable mapping target "a.b"`},
		{"publish on a catch", func() *model.Builder {
			return chain(func(b *model.Builder) { b.MessageCatchEvent("t", "m", "k", publish("")) })
		}, "t", "only message throw events and send tasks publish"},
		{"message on a plain task", func() *model.Builder {
			return chain(func(b *model.Builder) {
				b.Task("t", set(func(n *model.Node) { n.Message = &model.Message{Name: "m"} }))
			})
		}, "t", "has a message but is not a message event"},
		{"worker on a catch", func() *model.Builder {
			return chain(func(b *model.Builder) { b.MessageCatchEvent("t", "m", "k", worker("jobs")) })
		}, "t", "only service tasks and message throws have an operation"},
		{"compensation throw event naming no activity", func() *model.Builder {
			return chain(func(b *model.Builder) { b.CompensationThrowEvent("t", "nope") })
		}, "t", `activityRef "nope" is not an activity of this process`},
		{"message boundary without a message", func() *model.Builder {
			return chain(func(b *model.Builder) { b.Task("t") }).MessageBoundary("b", "t", "m", "k", true, noMessage).Flow("b", "e")
		}, "b", "has no message"},
		{"two message boundaries for one message", func() *model.Builder {
			return chain(func(b *model.Builder) { b.ReceiveTask("t", "r", "k") }).
				MessageBoundary("b1", "t", "m", "k", true).MessageBoundary("b2", "t", "m", "k2", false).Flow("b1", "e").Flow("b2", "e")
		}, "t", `message boundary events "b1" and "b2" both catch message "m"`},
		{"gateway with one branch", func() *model.Builder {
			return model.NewBuilder("p").StartEvent("s").EventBasedGateway("g").MessageCatchEvent("a", "m", "k").EndEvent("e").
				Sequence("s", "g", "a", "e")
		}, "g", "at least two outgoing"},
		{"gateway flow with a condition", func() *model.Builder {
			return gateway(func(b *model.Builder) { b.MessageCatchEvent("a", "m", "k").MessageCatchEvent("b", "n", "k") }).
				Flow("g", "e", model.When("x > 1"), model.FlowID("fc"))
		}, "g", `outgoing sequence flow "fc" has a condition`},
		{"gateway to a task", func() *model.Builder {
			return gateway(func(b *model.Builder) { b.MessageCatchEvent("a", "m", "k").Task("b") })
		}, "g", `leads to task "b"`},
		{"gateway target with another incoming flow", func() *model.Builder {
			return gateway(func(b *model.Builder) { b.MessageCatchEvent("a", "m", "k").MessageCatchEvent("b", "n", "k") }).Flow("s", "b")
		}, "g", `"b" after the gateway must have no other incoming`},
		{"gateway receive task with a boundary", func() *model.Builder {
			return gateway(func(b *model.Builder) { b.MessageCatchEvent("a", "m", "k").ReceiveTask("b", "n", "k") }).
				TimerBoundary("tb", "b", model.Duration("PT1M"), true).Flow("tb", "e")
		}, "g", `receive task "b" after the gateway cannot have boundary events`},
		{"gateway receive task with inputs", func() *model.Builder {
			return gateway(func(b *model.Builder) {
				b.MessageCatchEvent("a", "m", "k").ReceiveTask("b", "n", "x", model.Input("x", "1"))
			})
		}, "g", `receive task "b" after the gateway cannot have input mappings`},
		{"gateway multi-instance receive task", func() *model.Builder {
			return gateway(func(b *model.Builder) {
				b.MessageCatchEvent("a", "m", "k").ReceiveTask("b", "n", "k", set(func(n *model.Node) { n.Loop = &model.Loop{Cardinality: "2"} }))
			})
		}, "g", `"b" after the gateway cannot be multi-instance`},
		{"gateway with a default flow", func() *model.Builder {
			return gateway(func(b *model.Builder) { b.MessageCatchEvent("a", "m", "k").MessageCatchEvent("b", "n", "k") }).
				Task("x").DefaultFlow("g", "x").Flow("x", "e")
		}, "g", "has no default flow"},
		{"gateway branches for one message", func() *model.Builder {
			return gateway(func(b *model.Builder) { b.MessageCatchEvent("a", "m", "k").ReceiveTask("b", "m", "k2") })
		}, "g", `branches "a" and "b" both catch message "m"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := tt.b().Build()
			if err == nil {
				t.Fatalf("Build succeeded (%d nodes), want a problem with %q", len(p.Nodes), tt.element)
			}
			for _, e := range problems(t, err) {
				if e.Element == tt.element && strings.Contains(e.Msg, tt.msg) {
					return
				}
			}
			t.Errorf("no problem on element %q containing %q; got:\n%v", tt.element, tt.msg, err)
		})
	}
}
