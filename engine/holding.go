package engine

import (
	"context"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"

	"github.com/jetbpm/jetbpm/engine/messages"
	"github.com/jetbpm/jetbpm/engine/ownership/keeper"
	"github.com/jetbpm/jetbpm/engine/partition"
	"github.com/jetbpm/jetbpm/streams"
)

// A node steps the partitions whose leases its keeper holds
// (docs/engine.md §6.1): the keeper takes a partition's lease and calls
// holdPartition, which starts its instance partition and its message
// partition; it calls letPartitionGo before it lets the lease go, which
// stops both and waits until the batches in hand are written and
// acknowledged.

// slot is one partition's place on this node.
type slot struct {
	// part is the instance partition while this node steps it: Start
	// hands it its direct starts, the sweep its recovers.
	part atomic.Pointer[partition.Partition]

	mu   sync.Mutex
	stop context.CancelFunc // ends the holding; nil when not held
	done chan struct{}      // closed when both partitions have returned
}

// holding is what a node needs to step the partitions it takes.
type holding struct {
	partCfg *partition.Config
	msgCfg  *messages.Config
	entries *messages.Entries
	// consumers are the four pinned consumers of each partition, to
	// unpin: their streams and names.
	streams map[string]jetstream.Stream
}

// partitionConsumers names partition p's pinned consumers, by stream.
func partitionConsumers(p int) [][2]string {
	return [][2]string{
		{streams.EventsStream, streams.PartitionConsumer(p)},
		{streams.ReportsStream, streams.ReportsConsumer(p)},
		{streams.MessagesStream, streams.MessagesConsumer(p)},
		{streams.MessageCommandsStream, streams.MessageCommandsConsumer(p)},
	}
}

// openHolding looks up what holding partitions needs.
func (e *Engine) openHolding(ctx context.Context, partCfg *partition.Config, msgCfg *messages.Config, entries *messages.Entries) error {
	h := &holding{partCfg: partCfg, msgCfg: msgCfg, entries: entries, streams: map[string]jetstream.Stream{}}
	for _, c := range partitionConsumers(0) {
		s, err := e.js.Stream(ctx, c[0])
		if err != nil {
			return fmt.Errorf("engine: stream %s: %w", c[0], err)
		}
		h.streams[c[0]] = s
	}
	e.holding = h
	e.slots = make([]*slot, e.layout.Partitions)
	for p := range e.slots {
		e.slots[p] = &slot{}
	}
	return nil
}

// startKeeper starts the keeper of this node's share of the partitions
// and waits until it has taken what it could on a first full view.
func (e *Engine) startKeeper(ctx, runCtx context.Context) error {
	owners, err := e.js.KeyValue(ctx, streams.OwnersBucket)
	if err != nil {
		return fmt.Errorf("engine: bucket %s (a store provisioned by an older jetbpm gets it on its next provisioning): %w", streams.OwnersBucket, err)
	}
	host, _ := os.Hostname()
	id := e.opts.NodeID
	if id == "" {
		id = nuid.Next()
	}
	k, err := keeper.New(keeper.Config{
		KV:   owners,
		Node: keeper.Node{ID: id, Host: host, PID: os.Getpid(), Partitions: e.layout.Partitions},
		Take: e.holdPartition, Release: e.letPartitionGo, Unpin: e.unpin, Log: e.log, Now: e.opts.Now,
	})
	if err != nil {
		return fmt.Errorf("engine: %w", err)
	}
	e.keeper = k
	e.done.Go(func() {
		if err := k.Run(runCtx); err != nil {
			e.log.Error("engine: the partition keeper stopped; this node steps no partition", "err", err)
		}
	})
	return k.Ready(ctx)
}

// holdPartition starts stepping partition p, whose lease this node took
// at revision epoch. When it returns the partition takes direct starts,
// unless it could not be set up at once: then it is set up again every
// second until it is, or let go of.
func (e *Engine) holdPartition(p int, epoch uint64) {
	s := e.slots[p]
	ctx, stop := context.WithCancel(e.runCtx)
	done := make(chan struct{})
	s.mu.Lock()
	s.stop, s.done = stop, done
	s.mu.Unlock()
	setup := &partitionSetup{p: p, cfg: *e.holding.partCfg}
	if e.opts.wrote != nil {
		setup.cfg.Wrote = func(id string, rev uint64) { e.opts.wrote(p, epoch, id, rev) }
	}
	first, cancel := context.WithTimeout(ctx, 5*time.Second)
	err := e.setUp(first, setup)
	cancel()
	if err == nil && setup.part != nil {
		s.part.Store(setup.part)
	}
	go func() {
		defer close(done)
		e.stepPartition(ctx, setup, s)
	}()
}

// partitionSetup is partition p's instance and message partitions, as
// far as they are set up.
type partitionSetup struct {
	p    int
	cfg  partition.Config
	part *partition.Partition
	mp   *messages.Partition
}

// setUp sets up what of su is not yet.
func (e *Engine) setUp(ctx context.Context, su *partitionSetup) error {
	var err error
	if su.part == nil && !e.opts.messagePartitionsOnly {
		if su.part, err = partition.New(ctx, &su.cfg, su.p); err != nil {
			return err
		}
	}
	if su.mp == nil {
		su.mp, err = messages.NewPartition(ctx, e.holding.msgCfg, e.holding.entries, su.p)
	}
	return err
}

// stepPartition runs partition su.p's instance and message partitions
// until ctx ends, once they are set up.
func (e *Engine) stepPartition(ctx context.Context, su *partitionSetup, s *slot) {
	for ctx.Err() == nil && (su.mp == nil || su.part == nil && !e.opts.messagePartitionsOnly) {
		err := e.setUp(ctx, su)
		if err == nil {
			break
		}
		e.log.Error("engine: a partition taken cannot start; trying again", "partition", su.p, "err", err)
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
	if ctx.Err() != nil {
		s.part.Store(nil)
		return
	}
	p, part, mp := su.p, su.part, su.mp
	var wg sync.WaitGroup
	if part != nil {
		s.part.Store(part)
		wg.Go(func() { part.Run(ctx) })
		select {
		case e.pinned <- p: // the sweep looks at what its last holder may have left
		default: // the sweeper is busy with enough already
		}
	}
	wg.Go(func() { mp.Run(ctx) })
	wg.Wait()
	s.part.Store(nil)
}

// letPartitionGo stops partition p and returns when its batches in hand
// are written and acknowledged.
func (e *Engine) letPartitionGo(p int) {
	s := e.slots[p]
	s.mu.Lock()
	stop, done := s.stop, s.done
	s.stop, s.done = nil, nil
	s.mu.Unlock()
	if stop != nil {
		stop()
		<-done
	}
}

// unpin unpins partition p's four consumers, so the next node to pull
// them is pinned at once.
func (e *Engine) unpin(ctx context.Context, p int) error {
	var first error
	for _, c := range partitionConsumers(p) {
		if err := e.holding.streams[c[0]].UnpinConsumer(ctx, c[1], streams.PriorityGroup); err != nil && first == nil {
			first = fmt.Errorf("unpin %s/%s: %w", c[0], c[1], err)
		}
	}
	return first
}

// held returns instance partition p if this node steps it, else nil.
func (e *Engine) held(p int) *partition.Partition {
	if e.slots == nil {
		return nil
	}
	return e.slots[p].part.Load()
}

// isClosed reports whether Close has been called.
func (e *Engine) isClosed() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.closed
}

// Held returns the partitions this node steps now, in order.
func (e *Engine) Held() []int {
	var out []int
	for p, s := range e.slots {
		if s.part.Load() != nil {
			out = append(out, p)
		}
	}
	return out
}
