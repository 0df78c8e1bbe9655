package model_test

import (
	"strings"
	"testing"

	"github.com/jetbpm/jetbpm/engine/model"
)

func TestEventSubProcessValidation(t *testing.T) {
	main := func() *model.Builder {
		return model.NewBuilder("p").StartEvent("s").EndEvent("e").Flow("s", "e")
	}
	cases := []struct {
		name string
		make func() *model.Builder
		want string // "" = valid
	}{
		{"timer, message, error and escalation starts", func() *model.Builder {
			b := main()
			b.EventSubProcess("t", false).TimerStartEvent("ts", model.Cycle("R3/PT1M")).EndEvent("te").Flow("ts", "te")
			b.EventSubProcess("m", true).MessageStartEvent("ms", "m", model.CorrelationKey("k")).EndEvent("me").Flow("ms", "me")
			b.EventSubProcess("er", true).ErrorStartEvent("ers", "").EndEvent("ere").Flow("ers", "ere")
			b.EventSubProcess("es", false).EscalationStartEvent("ess", "X").EndEvent("ese").Flow("ess", "ese")
			return b
		}, ""},
		{"none start", func() *model.Builder {
			b := main()
			b.EventSubProcess("x", true).StartEvent("xs").EndEvent("xe").Flow("xs", "xe")
			return b
		}, "not a none start event"},
		{"no start", func() *model.Builder {
			b := main()
			b.EventSubProcess("x", true).EndEvent("xe")
			return b
		}, "has no start event inside it"},
		{"two starts", func() *model.Builder {
			b := main()
			b.EventSubProcess("x", true).ErrorStartEvent("a", "A").ErrorStartEvent("b", "B").EndEvent("xe").Flow("a", "xe").Flow("b", "xe")
			return b
		}, "has one start event"},
		{"non-interrupting error", func() *model.Builder {
			b := main()
			b.EventSubProcess("x", false).ErrorStartEvent("xs", "E").EndEvent("xe").Flow("xs", "xe")
			return b
		}, "always interrupting"},
		{"signal starts", func() *model.Builder {
			b := main()
			b.EventSubProcess("x", false).SignalStartEvent("xs", "go").EndEvent("xe").Flow("xs", "xe")
			b.EventSubProcess("y", true).SignalStartEvent("ys", "", model.SignalNameExpr(`"stop-" + order`)).EndEvent("ye").Flow("ys", "ye")
			return b
		}, ""},
		{"signal start without a signal", func() *model.Builder {
			b := main()
			b.EventSubProcess("x", false).StartEvent("xs", func(n *model.Node) { n.Event = model.SignalEvent }).EndEvent("xe").Flow("xs", "xe")
			return b
		}, "has no signal"},
		{"two signal starts of one name", func() *model.Builder {
			b := main()
			b.EventSubProcess("x", false).SignalStartEvent("xs", "go").EndEvent("xe").Flow("xs", "xe")
			b.EventSubProcess("y", true).SignalStartEvent("ys", "go").EndEvent("ye").Flow("ys", "ye")
			return b
		}, `both catch signal "go"`},
		{"flow into it", func() *model.Builder {
			b := model.NewBuilder("p").StartEvent("s")
			b.EventSubProcess("x", true).ErrorStartEvent("xs", "E").EndEvent("xe").Flow("xs", "xe")
			return b.Flow("s", "x")
		}, "no incoming or outgoing sequence flows"},
		{"nested", func() *model.Builder {
			b := main()
			x := b.EventSubProcess("x", true)
			x.ErrorStartEvent("xs", "E").EndEvent("xe").Flow("xs", "xe")
			x.EventSubProcess("y", true).ErrorStartEvent("ys", "F").EndEvent("ye").Flow("ys", "ye")
			return b
		}, "inside an event sub-process are not supported"},
		{"same error code twice in a scope", func() *model.Builder {
			b := main()
			b.EventSubProcess("a", true).ErrorStartEvent("as", "E").EndEvent("ae").Flow("as", "ae")
			b.EventSubProcess("b", true).ErrorStartEvent("bs", "E").EndEvent("be").Flow("bs", "be")
			return b
		}, `both catch error "E"`},
		{"two catch-all escalations in a scope", func() *model.Builder {
			b := main()
			b.EventSubProcess("a", false).EscalationStartEvent("as", "").EndEvent("ae").Flow("as", "ae")
			b.EventSubProcess("b", true).EscalationStartEvent("bs", "").EndEvent("be").Flow("bs", "be")
			return b
		}, "both catch every escalation"},
		{"same message twice in a scope", func() *model.Builder {
			b := main()
			b.EventSubProcess("a", false).MessageStartEvent("as", "m", model.CorrelationKey("k")).EndEvent("ae").Flow("as", "ae")
			b.EventSubProcess("b", true).MessageStartEvent("bs", "m", model.CorrelationKey("k")).EndEvent("be").Flow("bs", "be")
			return b
		}, `both catch message "m"`},
		{"same code in different scopes", func() *model.Builder {
			b := model.NewBuilder("p").StartEvent("s")
			sub := b.SubProcess("sub")
			sub.StartEvent("ss").EndEvent("se").Flow("ss", "se")
			sub.EventSubProcess("a", true).ErrorStartEvent("as", "E").EndEvent("ae").Flow("as", "ae")
			b.EventSubProcess("b", true).ErrorStartEvent("bs", "E").EndEvent("be").Flow("bs", "be")
			return b.EndEvent("e").Sequence("s", "sub", "e")
		}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.make().Build()
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("Build: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("Build error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestEscalationValidation(t *testing.T) {
	withSub := func(f func(b *model.Builder)) *model.Builder {
		b := model.NewBuilder("p").StartEvent("s")
		b.SubProcess("sub").StartEvent("ss").EscalationEndEvent("up", "X").Flow("ss", "up")
		b.ServiceTask("task", "op").EndEvent("e").Sequence("s", "sub", "task", "e")
		f(b)
		return b
	}
	cases := []struct {
		name string
		make func() *model.Builder
		want string
	}{
		{"valid", func() *model.Builder {
			return withSub(func(b *model.Builder) {
				b.EscalationBoundary("bx", "sub", "X", false).EndEvent("bxe").Flow("bx", "bxe")
				b.EscalationBoundary("ball", "sub", "", true).EndEvent("balle").Flow("ball", "balle")
			})
		}, ""},
		{"duplicate code", func() *model.Builder {
			return withSub(func(b *model.Builder) {
				b.EscalationBoundary("b1", "sub", "X", false).EndEvent("b1e").Flow("b1", "b1e")
				b.EscalationBoundary("b2", "sub", "X", true).EndEvent("b2e").Flow("b2", "b2e")
			})
		}, `both catch escalation "X"`},
		{"duplicate catch-all", func() *model.Builder {
			return withSub(func(b *model.Builder) {
				b.EscalationBoundary("b1", "sub", "", false).EndEvent("b1e").Flow("b1", "b1e")
				b.EscalationBoundary("b2", "sub", "", true).EndEvent("b2e").Flow("b2", "b2e")
			})
		}, "both catch every escalation"},
		{"on a task", func() *model.Builder {
			return withSub(func(b *model.Builder) {
				b.EscalationBoundary("b1", "task", "X", true).EndEvent("b1e").Flow("b1", "b1e")
			})
		}, "attach to sub-processes, call activities and user tasks"},
		{"throw without a code", func() *model.Builder {
			return model.NewBuilder("p").StartEvent("s").EscalationThrowEvent("t", "").EndEvent("e").Sequence("s", "t", "e")
		}, "throws no escalation code"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.make().Build()
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("Build: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("Build error %v, want one containing %q", err, tc.want)
			}
		})
	}
}
