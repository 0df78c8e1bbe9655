// Package ownership decides which engine node holds which partition
// (docs/engine.md §6.1). Every node sees the same live nodes and the same
// leases, in the owners bucket, and computes the same quotas from them:
// with N live nodes and P partitions, sorted by id, the first P mod N nodes
// may hold ⌈P/N⌉ partitions and the others ⌊P/N⌋, so the quotas sum to P.
// Decide tells one node what to do about its own share: which partitions
// to let go of (it holds more than its quota) and which free ones to try
// to take (it holds fewer), in an order of its own so that nodes seldom
// race for the same one.
//
// The package is pure: the keeper (engine/ownership/keeper) reads the
// bucket, calls Decide, and does what it says.
package ownership

import (
	"cmp"
	"hash/fnv"
	"slices"
	"strconv"
)

// Quota returns the number of partitions node id may hold, of p
// partitions over the live nodes (id among them); 0 when id is not live.
func Quota(id string, live []string, p int) int {
	nodes := sortedUnique(live)
	i, found := slices.BinarySearch(nodes, id)
	if !found || p <= 0 {
		return 0
	}
	n := len(nodes)
	q := p / n
	if i < p%n {
		q++
	}
	return q
}

// A Plan is what one node should do about its share of the partitions.
type Plan struct {
	// Quota is how many partitions the node may hold.
	Quota int
	// Release are partitions it holds beyond its quota, highest first:
	// it lets go of them.
	Release []int
	// Take are the free partitions it should try to take, most preferred
	// first, when it holds fewer than its quota; it stops once it holds
	// Quota (a free partition another node took first is skipped).
	Take []int
}

// Decide returns node me's plan over p partitions, given the live nodes
// (me counts as live whether or not it is listed) and holders, the node
// holding each leased partition. A partition held by a node that is not
// live is not free: its lease must expire, or be let go, first.
func Decide(me string, live []string, holders map[int]string, p int) Plan {
	quota := Quota(me, append(slices.Clone(live), me), p)
	var mine, free []int
	for part := range p {
		switch h, ok := holders[part]; {
		case !ok || h == "":
			free = append(free, part)
		case h == me:
			mine = append(mine, part)
		}
	}
	plan := Plan{Quota: quota}
	if len(mine) > quota {
		excess := mine[quota:]
		plan.Release = slices.Clone(excess)
		slices.Reverse(plan.Release)
		return plan
	}
	if len(mine) < quota && len(free) > 0 {
		slices.SortFunc(free, func(a, b int) int {
			return cmp.Or(cmp.Compare(rank(me, b), rank(me, a)), cmp.Compare(a, b))
		})
		plan.Take = free
	}
	return plan
}

// rank is node id's preference for partition part (rendezvous hashing):
// each node orders the partitions differently, so free ones are seldom
// raced for.
func rank(id string, part int) uint64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(id))
	_, _ = h.Write([]byte{0})
	_, _ = h.Write(strconv.AppendInt(nil, int64(part), 10))
	return h.Sum64()
}

func sortedUnique(ids []string) []string {
	out := slices.Clone(ids)
	slices.Sort(out)
	return slices.Compact(out)
}
