package index

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/jetbpm/jetbpm/engine/instance"
)

// Pick agrees with filtering and sorting every entry: process and status
// filter, newest first, ties by id, cut at the limit.
func TestPickMatchesASort(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	ix := &Instances{entries: map[string]*entry{}}
	statuses := []instance.Status{instance.Active, instance.Completed, instance.Terminated}
	for i := range 300 {
		e := &entry{
			id:      fmt.Sprintf("i%03d", i),
			process: fmt.Sprintf("p%d", r.IntN(3)),
			status:  statuses[r.IntN(len(statuses))],
			started: int64(r.IntN(50)), // ties on purpose
		}
		ix.entries[e.id] = e
	}
	active := func(s instance.Status) bool { return s == instance.Active }
	anyStatus := func(instance.Status) bool { return true }
	for _, c := range []struct {
		process string
		status  func(instance.Status) bool
		limit   int
	}{
		{"", anyStatus, 0}, {"", anyStatus, 1}, {"", anyStatus, 17}, {"p1", anyStatus, 10},
		{"p2", active, 0}, {"", active, 5}, {"p9", anyStatus, 3}, {"", anyStatus, 1000},
	} {
		var want []*entry
		for _, e := range ix.entries {
			if (c.process == "" || e.process == c.process) && c.status(e.status) {
				want = append(want, e)
			}
		}
		slices.SortFunc(want, func(a, b *entry) int {
			return cmp.Or(cmp.Compare(b.started, a.started), cmp.Compare(a.id, b.id))
		})
		if c.limit > 0 && len(want) > c.limit {
			want = want[:c.limit]
		}
		wantIDs := make([]string, len(want))
		for i, e := range want {
			wantIDs[i] = e.id
		}
		got := ix.Pick(c.process, c.status, c.limit)
		if !slices.Equal(got, wantIDs) {
			t.Errorf("Pick(%q, limit %d) = %v, want %v", c.process, c.limit, got, wantIDs)
		}
	}
}
