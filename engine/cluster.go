package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetbpm/jetbpm/internal/metrics"
	"github.com/jetbpm/jetbpm/streams"
)

// ClusterView is what an engine node knows of the cluster
// (docs/engine.md §6.1): the live nodes, from their heartbeats, and each
// partition's holder and backlog. Any node answers for all of them.
type ClusterView struct {
	// Node is the id of the node that answered.
	Node string `json:"node"`
	// Partitions is the store's partition count.
	Partitions int                `json:"partitions"`
	Nodes      []ClusterNode      `json:"nodes"`
	Partition  []PartitionHolding `json:"partition"`
}

// ClusterNode is one live engine node, as its heartbeat says.
type ClusterNode struct {
	ID      string    `json:"id"`
	Host    string    `json:"host,omitempty"`
	PID     int       `json:"pid,omitempty"`
	Started time.Time `json:"started"`
	// Holds are the partitions it held at its last heartbeat.
	Holds []int `json:"holds"`
}

// PartitionHolding is one partition's holder and backlog.
type PartitionHolding struct {
	Partition int `json:"partition"`
	// Node holds the partition's lease since Since; "" while no node
	// does (between a holder's death and its lease's expiry, or before
	// any node took it).
	Node  string    `json:"node,omitempty"`
	Since time.Time `json:"since,omitzero"`
	// Pending counts the partition's events and workers' reports not yet
	// acknowledged (stored, or delivered and being applied).
	Pending uint64 `json:"pending"`
	// OldestSeconds is the age of the oldest of them, 0 when none.
	OldestSeconds float64 `json:"oldestSeconds"`
}

// Cluster returns what this node knows of the cluster now: the nodes and
// leases from its watch of the owners bucket, each partition's backlog
// from the server.
func (e *Engine) Cluster(ctx context.Context) (*ClusterView, error) {
	if e.keeper == nil {
		return nil, fmt.Errorf("%w: this node keeps no partitions", ErrInvalid)
	}
	v := e.keeper.View()
	out := &ClusterView{Node: e.keeper.ID(), Partitions: e.layout.Partitions, Nodes: []ClusterNode{}}
	for _, n := range v.Nodes {
		if n.Partitions != e.layout.Partitions {
			continue
		}
		out.Nodes = append(out.Nodes, ClusterNode{ID: n.ID, Host: n.Host, PID: n.PID, Started: n.Started, Holds: nonNil(n.Holds)})
	}
	for p := range e.layout.Partitions {
		h := PartitionHolding{Partition: p}
		if l, ok := v.Leases[p]; ok {
			h.Node, h.Since = l.Node, l.Since
		}
		pending, oldest, err := e.backlog(ctx, p)
		if err != nil {
			return nil, fmt.Errorf("partition %d: %w", p, err)
		}
		h.Pending = pending
		if !oldest.IsZero() {
			h.OldestSeconds = max(e.opts.Now().Sub(oldest).Seconds(), 0)
		}
		out.Partition = append(out.Partition, h)
	}
	return out, nil
}

// backlog returns how many of partition p's events and reports are not
// yet acknowledged, and when the oldest of them was stored.
func (e *Engine) backlog(ctx context.Context, p int) (pending uint64, oldest time.Time, err error) {
	for _, c := range []struct{ stream, consumer, filter string }{
		{streams.EventsStream, streams.PartitionConsumer(p), streams.PartitionFilter(p)},
		{streams.ReportsStream, streams.ReportsConsumer(p), streams.ReportsFilter(p)},
	} {
		s := e.holding.streams[c.stream]
		cons, err := s.Consumer(ctx, c.consumer)
		if err != nil {
			return 0, time.Time{}, fmt.Errorf("consumer %s: %w", c.consumer, err)
		}
		info := cons.CachedInfo()
		n := info.NumPending + uint64(max(info.NumAckPending, 0))
		if n == 0 {
			continue
		}
		pending += n
		m, err := s.GetMsg(ctx, info.AckFloor.Stream+1, jetstream.WithGetMsgSubject(c.filter))
		switch {
		case errors.Is(err, jetstream.ErrMsgNotFound):
			continue // acknowledged meanwhile
		case err != nil:
			return 0, time.Time{}, fmt.Errorf("oldest of %s: %w", c.consumer, err)
		}
		if oldest.IsZero() || m.Time.Before(oldest) {
			oldest = m.Time
		}
	}
	return pending, oldest, nil
}

// registerClusterMetrics adds the partitions' metrics to r: which this
// node holds, and the backlog of those it holds (each holder reports its
// own, so the cluster's is the sum over the nodes).
func (e *Engine) registerClusterMetrics(r *metrics.Registry) {
	if r == nil {
		return
	}
	r.NewGaugeVecFunc("jetbpm_partition_held", "1 for each partition this node holds the lease of and steps, 0 for the others (docs/engine.md §6.1).", []string{"partition"},
		func(emit func(float64, ...string)) {
			held := e.Held()
			for p := range e.layout.Partitions {
				emit(b2f(slices.Contains(held, p)), fmt.Sprint(p))
			}
		})
	// One scrape reads both backlog gauges, one after the other: they
	// share a reading of the consumers taken at most a second before.
	type row struct {
		p               string
		pending, oldest float64
	}
	var (
		mu    sync.Mutex
		taken time.Time
		rows  []row
	)
	backlog := func(emit func(pending, oldest float64, p string)) {
		mu.Lock()
		defer mu.Unlock()
		if taken.IsZero() || time.Since(taken) > time.Second {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			rows = rows[:0]
			for _, p := range e.Held() {
				pending, oldest, err := e.backlog(ctx, p)
				if err != nil {
					continue
				}
				age := 0.0
				if !oldest.IsZero() {
					age = max(e.opts.Now().Sub(oldest).Seconds(), 0)
				}
				rows = append(rows, row{fmt.Sprint(p), float64(pending), age})
			}
			taken = time.Now()
		}
		for _, r := range rows {
			emit(r.pending, r.oldest, r.p)
		}
	}
	r.NewGaugeVecFunc("jetbpm_partition_pending", "Events and workers' reports of a partition this node holds, not yet acknowledged.", []string{"partition"},
		func(emit func(float64, ...string)) {
			backlog(func(pending, _ float64, p string) { emit(pending, p) })
		})
	r.NewGaugeVecFunc("jetbpm_partition_oldest_seconds", "Age of the oldest unacknowledged event or report of a partition this node holds; 0 when none.", []string{"partition"},
		func(emit func(float64, ...string)) {
			backlog(func(_, age float64, p string) { emit(age, p) })
		})
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func nonNil(s []int) []int {
	if s == nil {
		return []int{}
	}
	return s
}
