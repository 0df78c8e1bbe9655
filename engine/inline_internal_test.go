package engine

import (
	"slices"
	"testing"

	"github.com/jetbpm/jetbpm/engine/instance"
)

func TestDropCancelledSchedules(t *testing.T) {
	sched := func(w string) instance.Effect { return instance.Effect{Kind: instance.ScheduleTimer, Wait: w} }
	cancel := func(w string) instance.Effect { return instance.Effect{Kind: instance.CancelTimer, Wait: w} }
	fact := instance.Effect{Kind: instance.PublishFact}
	for _, tc := range []struct {
		name    string
		created bool
		in      []instance.Effect
		want    []instance.Effect
	}{
		{"armed and cancelled as the instance is created: neither", true,
			[]instance.Effect{fact, sched("w"), cancel("w"), fact}, []instance.Effect{fact, fact}},
		{"armed and cancelled later in its life: the cancel stays", false,
			[]instance.Effect{sched("w"), cancel("w")}, []instance.Effect{cancel("w")}},
		{"cancelled, then armed again: both stay", false,
			[]instance.Effect{cancel("w"), sched("w")}, []instance.Effect{cancel("w"), sched("w")}},
		{"armed, cancelled, armed again: the last schedule stays", true,
			[]instance.Effect{sched("w"), cancel("w"), sched("w")}, []instance.Effect{sched("w")}},
		{"another timer is untouched", true,
			[]instance.Effect{sched("v"), sched("w"), cancel("w")}, []instance.Effect{sched("v")}},
		{"a cancel with no schedule in the outbox stays", true,
			[]instance.Effect{cancel("w")}, []instance.Effect{cancel("w")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &instance.State{Outbox: slices.Clone(tc.in)}
			dropCancelledSchedules(s, tc.created)
			if !slices.EqualFunc(s.Outbox, tc.want, func(a, b instance.Effect) bool { return a.Kind == b.Kind && a.Wait == b.Wait }) {
				t.Fatalf("outbox %v, want %v", s.Outbox, tc.want)
			}
		})
	}
}
