package index

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetbpm/jetbpm/engine/instance"
	"github.com/jetbpm/jetbpm/streams"
)

// fakeEntry is a write of the tasks bucket as a watch delivers it.
type fakeEntry struct {
	key   string
	value []byte
	op    jetstream.KeyValueOp
}

func (e fakeEntry) Bucket() string                  { return streams.TasksBucket }
func (e fakeEntry) Key() string                     { return e.key }
func (e fakeEntry) Value() []byte                   { return e.value }
func (e fakeEntry) Revision() uint64                { return 0 }
func (e fakeEntry) Created() time.Time              { return time.Time{} }
func (e fakeEntry) Delta() uint64                   { return 0 }
func (e fakeEntry) Operation() jetstream.KeyValueOp { return e.op }

// put adds a record to ix as the watch would.
func (ix *Tasks) put(t testing.TB, rec *instance.Task) {
	t.Helper()
	raw, err := streams.Marshal(rec)
	if err != nil {
		t.Fatal(err)
	}
	ix.apply(fakeEntry{key: streams.TaskKey(rec.ID), value: raw})
}

// randomTasks makes n records with a few groups, users, processes and
// states, priorities with many ties, and creation times with ties.
func randomTasks(r *rand.Rand, n int) []*instance.Task {
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	states := []instance.TaskState{instance.TaskCreated, instance.TaskCreated, instance.TaskAssigned, instance.TaskCompleted, instance.TaskCanceled}
	out := make([]*instance.Task, n)
	for i := range n {
		rec := &instance.Task{
			ID: fmt.Sprintf("i%d.t%d", i%97, i), Instance: fmt.Sprintf("i%d", i%97), ProcessID: fmt.Sprintf("p%d", i%3),
			Priority: r.IntN(5) * 25, CreatedAt: t0.Add(time.Duration(r.IntN(50)) * time.Second), State: states[r.IntN(len(states))],
			Revision: 1,
		}
		for g := range 4 {
			if r.IntN(3) == 0 {
				rec.CandidateGroups = append(rec.CandidateGroups, fmt.Sprintf("g%d", g))
			}
		}
		if r.IntN(4) == 0 {
			rec.CandidateUsers = []string{fmt.Sprintf("u%d", r.IntN(3))}
		}
		if rec.State == instance.TaskAssigned || rec.State.Finished() && r.IntN(2) == 0 {
			rec.Assignee = fmt.Sprintf("u%d", r.IntN(3))
		}
		if r.IntN(2) == 0 {
			rec.DueDate = t0.Add(time.Duration(r.IntN(100)) * time.Hour)
		}
		out[i] = rec
	}
	return out
}

// naiveList is the list's definition: filter every record, sort it all.
func naiveList(recs []*instance.Task, f TaskFilter) []string {
	var match []*instance.Task
	for _, rec := range recs {
		e := &taskEntry{id: rec.ID, instance: rec.Instance, process: rec.ProcessID, assignee: rec.Assignee, users: rec.CandidateUsers,
			groups: rec.CandidateGroups, state: rec.State, due: rec.DueDate}
		if f.match(e) {
			match = append(match, rec)
		}
	}
	slices.SortFunc(match, func(a, b *instance.Task) int {
		switch {
		case a.Priority != b.Priority:
			return b.Priority - a.Priority
		case !a.CreatedAt.Equal(b.CreatedAt):
			return a.CreatedAt.Compare(b.CreatedAt)
		case a.ID < b.ID:
			return -1
		}
		return 1
	})
	ids := []string{}
	for _, rec := range match {
		ids = append(ids, rec.ID)
	}
	if f.Offset >= len(ids) {
		return []string{}
	}
	ids = ids[f.Offset:]
	if f.Limit > 0 && len(ids) > f.Limit {
		ids = ids[:f.Limit]
	}
	return ids
}

// The index's page (one pass over the narrowest set, a heap of the best)
// is exactly the naive list's, for every kind of filter.
func TestTaskIndexListsAsDefined(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 2))
	recs := randomTasks(r, 2000)
	ix := NewTasks(nil, slog.Default())
	for _, rec := range recs {
		ix.put(t, rec)
	}
	due := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	filters := []TaskFilter{
		{}, {State: TasksAll}, {State: "canceled"}, {Limit: 10}, {Offset: 5, Limit: 7}, {Offset: 5000},
		{CandidateGroup: "g1"}, {CandidateGroup: "g1", IncludeAssigned: true, State: TasksAll},
		{CandidateUser: "u1"}, {CandidateUser: "u2", CandidateGroup: "g3", Limit: 20},
		{CandidateUser: "u0", CandidateGroup: "g0", IncludeAssigned: true, Offset: 3},
		{Assignee: "u1", State: TasksAll}, {Assignee: "u2", ProcessID: "p1"}, {Instance: "i7", State: TasksAll},
		{ProcessID: "p2", CandidateGroup: "g2", Limit: 5}, {DueBefore: due}, {DueBefore: due, CandidateGroup: "g0", Limit: 3},
		{CandidateGroup: "nobody"}, {Instance: "i7", ProcessID: "p0"},
	}
	check := func(when string) {
		t.Helper()
		for _, f := range filters {
			ix.mu.RLock()
			picked := ix.pick(f)
			ix.mu.RUnlock()
			got := []string{}
			for _, e := range picked {
				got = append(got, e.id)
			}
			if want := naiveList(recs, f); !slices.Equal(got, want) {
				t.Errorf("%s: filter %+v:\n got %v\nwant %v", when, f, got, want)
			}
		}
	}
	check("filled")

	// A third of the records go (expired), a third change: their sets
	// shrink and grow, large ones included.
	changed := randomTasks(r, len(recs))
	var kept []*instance.Task
	for i, rec := range recs {
		switch i % 3 {
		case 0:
			ix.apply(fakeEntry{key: streams.TaskKey(rec.ID), op: jetstream.KeyValuePurge})
		case 1:
			next := changed[i]
			next.ID, next.Instance, next.Revision = rec.ID, rec.Instance, 2
			ix.put(t, next)
			kept = append(kept, next)
		default:
			kept = append(kept, rec)
		}
	}
	recs = kept
	check("changed")
	if open := ix.OpenCount(); open != len(naiveList(recs, TaskFilter{})) {
		t.Errorf("open count %d", open)
	}
}

// A record replaces the one before it (its filter fields move), an older
// revision is ignored, and a deletion marker removes it.
func TestTaskIndexFollowsWrites(t *testing.T) {
	t.Parallel()
	ix := NewTasks(nil, slog.Default())
	rec := &instance.Task{ID: "i1.t2", Instance: "i1", ProcessID: "p", CandidateGroups: []string{"a"}, State: instance.TaskCreated, Revision: 1}
	ix.put(t, rec)
	moved := *rec
	moved.CandidateGroups, moved.Assignee, moved.State, moved.Revision = []string{"b"}, "u", instance.TaskAssigned, 3
	ix.put(t, &moved)
	ix.put(t, rec) // revision 1 again: stale
	list := func(f TaskFilter) []string {
		tasks, err := ix.List(f)
		if err != nil {
			t.Fatal(err)
		}
		ids := []string{}
		for _, rec := range tasks {
			ids = append(ids, rec.ID)
		}
		return ids
	}
	for _, c := range []struct {
		f    TaskFilter
		want []string
	}{
		{TaskFilter{CandidateGroup: "a", IncludeAssigned: true}, []string{}},
		{TaskFilter{CandidateGroup: "b", IncludeAssigned: true}, []string{"i1.t2"}},
		{TaskFilter{CandidateGroup: "b"}, []string{}},
		{TaskFilter{Assignee: "u"}, []string{"i1.t2"}},
	} {
		if got := list(c.f); !slices.Equal(got, c.want) {
			t.Errorf("%+v: %v, want %v", c.f, got, c.want)
		}
	}
	if ix.OpenCount() != 1 || len(ix.byGroup) != 1 {
		t.Fatalf("open %d, groups %v", ix.OpenCount(), ix.byGroup)
	}
	ix.apply(fakeEntry{key: streams.TaskKey("i1.t2"), op: jetstream.KeyValuePurge})
	if ix.OpenCount() != 0 || len(ix.entries) != 0 || len(ix.byGroup)+len(ix.byAssignee)+len(ix.byProcess)+len(ix.byInstance) != 0 {
		t.Fatalf("after the marker: %d open, entries %v", ix.OpenCount(), ix.entries)
	}
}

// A list waits for the index to read the bucket, bounded, and says so
// when it cannot.
func TestTaskIndexWaitIsBounded(t *testing.T) {
	t.Parallel()
	ix := NewTasks(nil, slog.Default()) // never run: never caught up
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	err := ix.Wait(ctx)
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "still reading bucket "+streams.TasksBucket) {
		t.Fatalf("wait = %v", err)
	}
	ix.caughtUp()
	if err := ix.Wait(context.Background()); err != nil {
		t.Fatalf("wait once caught up = %v", err)
	}
}

// BenchmarkTaskIndexMemory reports what the index holds per task: 100,000
// records like BenchmarkTaskList's, applied as the watch would. The index
// keeps each record's bytes (record-bytes/task, allocated by the watch, so
// not in index-bytes/task) and its own structures (index-bytes/task).
func BenchmarkTaskIndexMemory(b *testing.B) {
	const n = 100_000
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	entries := make([]fakeEntry, n)
	stored := 0 // bytes of the records, which the index keeps too
	for i := range n {
		rec := &instance.Task{
			ID: instance.TaskID(fmt.Sprintf("inst-%06d", i), 2), Instance: fmt.Sprintf("inst-%06d", i), ProcessID: fmt.Sprintf("proc-%d", i%10),
			Version: 1, Node: "review", Name: "Review", CandidateGroups: []string{"everyone", fmt.Sprintf("g%d", i%20)},
			Priority: (i * 37) % 101, CreatedAt: t0.Add(time.Duration(i) * time.Second), State: instance.TaskCreated,
			Variables: map[string]any{"amount": int64(i)}, Revision: 1,
		}
		raw, err := streams.Marshal(rec)
		if err != nil {
			b.Fatal(err)
		}
		entries[i] = fakeEntry{key: streams.TaskKey(rec.ID), value: raw}
		stored += len(raw)
	}
	heap := func() uint64 {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	for b.Loop() {
		before := heap()
		ix := NewTasks(nil, slog.Default())
		for _, e := range entries {
			ix.apply(e)
		}
		b.ReportMetric(float64(heap()-before)/n, "index-bytes/task")
		b.ReportMetric(float64(stored)/n, "record-bytes/task")
		runtime.KeepAlive(ix)
	}
}
