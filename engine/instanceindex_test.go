package engine_test

import (
	"cmp"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/jetbpm/jetbpm/engine"
	"github.com/jetbpm/jetbpm/engine/instance"
	"github.com/jetbpm/jetbpm/incidents"
	"github.com/jetbpm/jetbpm/streams"
	"github.com/jetbpm/jetbpm/streams/streamstest"
)

// Instances lists from each node's instance index: filtered by process and
// status, newest first, cut at the limit; a status change shows in the next
// list on any node, and a node that starts builds its index from the
// bucket, including a checkpoint written without the summary headers.
func TestInstancesFromTheIndex(t *testing.T) {
	t.Parallel()
	env := streamstest.Start(t)
	eng := openEngine(t, env, nil)
	for _, p := range []string{"alpha", "beta"} {
		if _, err := eng.Deploy(bounded(t), approvalProcess(t, p)); err != nil {
			t.Fatal(err)
		}
	}
	var started []*engine.InstanceView
	for i, p := range []string{"alpha", "beta", "alpha", "beta", "alpha"} {
		id, err := eng.Start(bounded(t), p, nil, engine.InstanceID(fmt.Sprintf("i-%d", i)))
		if err != nil {
			t.Fatal(err)
		}
		started = append(started, awaitView(t, eng, id, "reached review", func(v *engine.InstanceView) bool {
			return slices.Contains(v.ActiveNodes, "review")
		}))
	}
	// The order a list must have: newest first, then by id.
	slices.SortFunc(started, func(a, b *engine.InstanceView) int {
		return cmp.Or(b.StartedAt.Compare(a.StartedAt), cmp.Compare(a.ID, b.ID))
	})
	ids := func(views []*engine.InstanceView) []string {
		out := []string{}
		for _, v := range views {
			out = append(out, v.ID)
		}
		return out
	}
	where := func(keep func(*engine.InstanceView) bool) []string {
		var out []*engine.InstanceView
		for _, v := range started {
			if keep(v) {
				out = append(out, v)
			}
		}
		return ids(out)
	}
	all := ids(started)
	check := func(eng *engine.Engine, f engine.Filter, want []string) {
		t.Helper()
		list, err := eng.Instances(bounded(t), f)
		if err != nil {
			t.Fatalf("Instances(%+v): %v", f, err)
		}
		if got := ids(list); !slices.Equal(got, want) {
			t.Fatalf("Instances(%+v) = %v, want %v", f, got, want)
		}
	}
	check(eng, engine.Filter{}, all)
	check(eng, engine.Filter{Limit: 2}, all[:2])
	check(eng, engine.Filter{Limit: 10}, all)
	beta := where(func(v *engine.InstanceView) bool { return v.ProcessID == "beta" })
	check(eng, engine.Filter{ProcessID: "beta"}, beta)
	alpha := where(func(v *engine.InstanceView) bool { return v.ProcessID == "alpha" })
	check(eng, engine.Filter{ProcessID: "alpha", Limit: 2}, alpha[:2])
	check(eng, engine.Filter{ProcessID: "gamma"}, []string{})
	check(eng, engine.Filter{Status: instance.Active}, all)
	check(eng, engine.Filter{Status: instance.Terminated}, []string{})

	// A second node builds its index from the bucket.
	other := openEngine(t, env, nil)
	check(other, engine.Filter{ProcessID: "beta"}, beta)

	// Cancelling an instance moves it from one status's list to the other's,
	// on both nodes, in the next list.
	if err := eng.Cancel(bounded(t), alpha[0], "test"); err != nil {
		t.Fatal(err)
	}
	for _, node := range []*engine.Engine{eng, other} {
		check(node, engine.Filter{Status: instance.Terminated}, []string{alpha[0]})
		check(node, engine.Filter{ProcessID: "alpha", Status: instance.Active}, alpha[1:])
	}

	// A checkpoint written before checkpoints carried a summary is read
	// once, and listed like any other.
	kv, err := env.JS.KeyValue(bounded(t), streams.InstancesBucket)
	if err != nil {
		t.Fatal(err)
	}
	old := &instance.State{ID: "legacy", ProcessID: "gamma", Version: 1, Status: instance.Completed,
		StartedAt: time.Date(2020, 1, 2, 3, 4, 5, 0, time.UTC), EndedAt: time.Date(2020, 1, 2, 3, 5, 0, 0, time.UTC)}
	data, err := streams.Marshal(old)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Put(bounded(t), old.ID, data); err != nil {
		t.Fatal(err)
	}
	for _, node := range []*engine.Engine{eng, other} {
		check(node, engine.Filter{ProcessID: "gamma"}, []string{"legacy"})
		check(node, engine.Filter{}, append(slices.Clone(all), "legacy")) // the oldest
	}
}

// Lists of an empty store answer at once, empty: the watches behind them
// end on a bucket with nothing in it.
func TestListsOfAnEmptyStore(t *testing.T) {
	t.Parallel()
	eng := openEngine(t, streamstest.Start(t), nil)
	if recs, err := eng.Incidents(bounded(t), incidents.Filter{}); err != nil || len(recs) != 0 {
		t.Fatalf("Incidents of an empty store = %v, %v; want none", recs, err)
	}
	if views, err := eng.Instances(bounded(t), engine.Filter{}); err != nil || len(views) != 0 {
		t.Fatalf("Instances of an empty store = %v, %v; want none", views, err)
	}
}
