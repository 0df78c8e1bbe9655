package ownership_test

import (
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/jetbpm/jetbpm/engine/ownership"
)

// The quotas of N nodes over P partitions are ⌊P/N⌋ or ⌈P/N⌉ and sum to
// P, whatever order the nodes are listed in; a node not live has none.
func TestQuotas(t *testing.T) {
	for _, p := range []int{1, 3, 8, 16, 17} {
		for n := 1; n <= 10; n++ {
			var live []string
			for i := range n {
				live = append(live, fmt.Sprintf("n%02d", n-1-i)) // listed out of order
			}
			sum := 0
			for _, id := range live {
				q := ownership.Quota(id, live, p)
				if q != p/n && q != (p+n-1)/n {
					t.Fatalf("P=%d N=%d: quota of %s = %d", p, n, id, q)
				}
				sum += q
			}
			if sum != p {
				t.Fatalf("P=%d N=%d: quotas sum to %d", p, n, sum)
			}
		}
	}
	if q := ownership.Quota("gone", []string{"a", "b"}, 8); q != 0 {
		t.Errorf("a node that is not live has quota %d", q)
	}
	if q := ownership.Quota("a", []string{"a", "a", "b"}, 3); q != 2 {
		t.Errorf("a node listed twice counts once: quota %d, want 2", q)
	}
}

// A node over its quota lets go of its highest partitions; one under it
// is told the free partitions in its own order; a partition a node that
// is not live still holds is not free.
func TestDecide(t *testing.T) {
	holders := map[int]string{0: "a", 1: "a", 2: "a", 3: "a", 4: "b", 5: "gone"}
	plan := ownership.Decide("a", []string{"a", "b", "c"}, holders, 8)
	if plan.Quota != 3 || !slices.Equal(plan.Release, []int{3}) || plan.Take != nil {
		t.Errorf("a: %+v, want quota 3, release [3]", plan)
	}
	plan = ownership.Decide("c", []string{"a", "b"}, holders, 8) // c's first heartbeat is not seen yet
	if plan.Quota != 2 || plan.Release != nil {
		t.Fatalf("c: %+v", plan)
	}
	if got := slices.Sorted(slices.Values(plan.Take)); !slices.Equal(got, []int{6, 7}) {
		t.Errorf("c may take %v, want the free 6 and 7 (5 is a dead node's until its lease expires)", plan.Take)
	}
	if plan := ownership.Decide("b", []string{"a", "b", "c"}, holders, 8); plan.Quota != 3 || len(plan.Take) != 2 {
		t.Errorf("b: %+v, want quota 3 and both free partitions to try", plan)
	}
}

// Played out, the plans converge: nodes joining and leaving, each taking
// in its own order and losing races to earlier takers, end with every
// partition held and every node at its quota.
func TestDecideConverges(t *testing.T) {
	const p = 16
	holders := map[int]string{}
	settle := func(live []string) int {
		for round := 1; round <= 10; round++ {
			moved := false
			for _, id := range live {
				plan := ownership.Decide(id, live, holders, p)
				for _, part := range plan.Release {
					delete(holders, part)
					moved = true
				}
				held := 0
				for _, h := range holders {
					if h == id {
						held++
					}
				}
				for _, part := range plan.Take {
					if held == plan.Quota {
						break
					}
					if _, taken := holders[part]; !taken {
						holders[part] = id
						held++
						moved = true
					}
				}
			}
			if !moved {
				return round
			}
		}
		t.Fatalf("live %v: not settled after 10 rounds: %v", live, holders)
		return 0
	}
	check := func(live []string) {
		t.Helper()
		// The leases of nodes that left expire.
		maps.DeleteFunc(holders, func(_ int, h string) bool { return !slices.Contains(live, h) })
		settle(live)
		count := map[string]int{}
		for part := range p {
			h, ok := holders[part]
			if !ok || !slices.Contains(live, h) {
				t.Fatalf("live %v: partition %d held by %q", live, part, h)
			}
			count[h]++
		}
		for _, id := range live {
			if q := ownership.Quota(id, live, p); count[id] != q {
				t.Fatalf("live %v: %s holds %d, quota %d (%v)", live, id, count[id], q, count)
			}
		}
	}
	check([]string{"a"})
	check([]string{"a", "b"})
	check([]string{"a", "b", "c"})
	check([]string{"a", "b"}) // c died

	check([]string{"a", "b", "d", "e", "f"})
	// More nodes than partitions (d, e and f gone): the extra ones hold
	// none.
	var many []string
	for i := range p + 4 {
		many = append(many, fmt.Sprintf("m%02d", i))
	}
	check(append(many, "a", "b"))
}
