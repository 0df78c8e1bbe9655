package partition

import (
	"slices"
	"testing"

	"github.com/jetbpm/jetbpm/engine/checkpoint"
	"github.com/jetbpm/jetbpm/engine/instance"
)

// TestHeldGroupsGoFirst: a held group keeps its place ahead of newer
// messages for its instance (events in arrival order, its start kept),
// and splitBusy keeps each side's order.
func TestHeldGroupsGoFirst(t *testing.T) {
	ev := func(id string) instance.Event { return instance.Event{ID: id} }
	held := []*group{
		{id: "a", events: []instance.Event{ev("a1")}, start: &checkpoint.StartRequest{ProcessID: "p"}},
		{id: "b", events: []instance.Event{ev("b1")}},
	}
	fresh := []*group{
		{id: "c", events: []instance.Event{ev("c1")}},
		{id: "a", events: []instance.Event{ev("a2")}, start: &checkpoint.StartRequest{ProcessID: "later"}},
	}
	got := mergeHeld(held, fresh)
	var ids []string
	for _, g := range got {
		ids = append(ids, g.id)
	}
	if !slices.Equal(ids, []string{"a", "b", "c"}) {
		t.Fatalf("merged groups %v, want a, b, c", ids)
	}
	if a := got[0]; len(a.events) != 2 || a.events[0].ID != "a1" || a.events[1].ID != "a2" || a.start.ProcessID != "p" {
		t.Fatalf("a merged as %+v, want events a1, a2 and the held start", a)
	}

	ready, busy := splitBusy(got, map[string]bool{"b": true})
	if len(ready) != 2 || ready[0].id != "a" || ready[1].id != "c" || len(busy) != 1 || busy[0].id != "b" {
		t.Fatalf("split into %v and %v, want [a c] and [b]", ready, busy)
	}
	if g := mergeHeld(nil, fresh); len(g) != 2 || g[0] != fresh[0] {
		t.Fatalf("nothing held: got %v, want the new groups as they are", g)
	}
}
