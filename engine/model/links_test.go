package model_test

import (
	"strings"
	"testing"

	"github.com/jetbpm/jetbpm/engine/model"
)

func TestLinkTarget(t *testing.T) {
	b := model.NewBuilder("p").StartEvent("s").ExclusiveGateway("x").
		LinkThrowEvent("toEnd", "finish").LinkThrowEvent("alsoToEnd", "finish").LinkCatchEvent("finish", "finish").Task("sub0").
		Flow("s", "x").Flow("x", "toEnd", model.When("a")).DefaultFlow("x", "alsoToEnd").Flow("finish", "sub0")
	b.SubProcess("sub").StartEvent("ss").LinkThrowEvent("in", "finish").LinkCatchEvent("inner", "finish").EndEvent("se").
		Flow("ss", "in").Flow("inner", "se")
	b.EndEvent("e").Sequence("sub0", "sub", "e")
	p, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	for throw, want := range map[string]string{"toEnd": "finish", "alsoToEnd": "finish", "in": "inner"} {
		if c := p.LinkTarget(throw); c == nil || c.ID != want {
			t.Errorf("LinkTarget(%s) = %v, want %s (same name, own scope)", throw, c, want)
		}
	}
	for _, id := range []string{"finish", "inner", "x", "nope"} {
		if c := p.LinkTarget(id); c != nil {
			t.Errorf("LinkTarget(%s) = %s, want nil: not a link throw", id, c.ID)
		}
	}
}

func TestLinkValidation(t *testing.T) {
	for _, tt := range []struct {
		name    string
		b       func() *model.Builder
		element string
		msg     string
	}{
		{"throw without catch", func() *model.Builder {
			return model.NewBuilder("p").StartEvent("s").LinkThrowEvent("t", "nowhere").Flow("s", "t")
		}, "t", `link "nowhere" has no link catch event in the same scope`},
		{"catch in another scope", func() *model.Builder {
			b := model.NewBuilder("p").StartEvent("s").LinkThrowEvent("t", "l").Flow("s", "t")
			b.SubProcess("sub").StartEvent("ss").LinkCatchEvent("c", "l").EndEvent("se").Flow("ss", "se").Flow("c", "se")
			return b
		}, "t", `link "l" has no link catch event in the same scope`},
		{"two catches of one name", func() *model.Builder {
			return model.NewBuilder("p").StartEvent("s").LinkThrowEvent("t", "l").
				LinkCatchEvent("c1", "l").LinkCatchEvent("c2", "l").EndEvent("e").Flow("s", "t").Flow("c1", "e").Flow("c2", "e")
		}, "c2", `link "l" already has the link catch event "c1" in this scope`},
		{"flow into a catch", func() *model.Builder {
			return model.NewBuilder("p").StartEvent("s").LinkCatchEvent("c", "l").EndEvent("e").Sequence("s", "c", "e")
		}, "c", "reached by its link throw events only"},
		{"flow out of a throw", func() *model.Builder {
			return model.NewBuilder("p").StartEvent("s").LinkThrowEvent("t", "l").LinkCatchEvent("c", "l").EndEvent("e").
				Sequence("s", "t", "e").Flow("c", "e")
		}, "t", "a link throw event has no outgoing sequence flows"},
		{"throw without a name", func() *model.Builder {
			return model.NewBuilder("p").StartEvent("s").LinkThrowEvent("t", "").Flow("s", "t")
		}, "t", "a link event needs a name"},
		{"catch without a name", func() *model.Builder {
			return model.NewBuilder("p").StartEvent("s").EndEvent("e").LinkCatchEvent("c", "").Flow("s", "e").Flow("c", "e")
		}, "c", "a link event needs a name"},
		{"link name on a task", func() *model.Builder {
			return chain(func(b *model.Builder) { b.Task("t", set(func(n *model.Node) { n.Link = "l" })) })
		}, "t", "only link events have a link name"},
		{"link end event", func() *model.Builder {
			return model.NewBuilder("p").StartEvent("s").EndEvent("e", set(func(n *model.Node) { n.Event, n.Link = model.LinkEvent, "l" })).Flow("s", "e")
		}, "e", "link end events are not supported"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.b().Build()
			for _, e := range problems(t, err) {
				if e.Element == tt.element && strings.Contains(e.Msg, tt.msg) {
					return
				}
			}
			t.Errorf("no problem on %q containing %q; got %v", tt.element, tt.msg, err)
		})
	}
}

// A none intermediate throw event may have input and output mappings (a
// milestone), and so may a link throw; other events without a job may not.
func TestMilestoneMappings(t *testing.T) {
	b := model.NewBuilder("p").StartEvent("s").ThrowEvent("m", model.Input("x", "1"), model.Output("reached", "x + 1")).EndEvent("e").
		Sequence("s", "m", "e")
	if _, err := b.Build(); err != nil {
		t.Fatal(err)
	}
	b = model.NewBuilder("p").StartEvent("s").LinkThrowEvent("t", "l", model.Output("x", "1")).LinkCatchEvent("c", "l").EndEvent("e").
		Flow("s", "t").Flow("c", "e")
	if _, err := b.Build(); err != nil {
		t.Fatalf("a link throw with outputs: %v", err)
	}
	b = model.NewBuilder("p").StartEvent("s").EndEvent("e", model.Output("x", "1")).Sequence("s", "e")
	if _, err := b.Build(); err == nil || !strings.Contains(err.Error(), "have output mappings") {
		t.Fatalf("an end event with outputs: %v", err)
	}
}
