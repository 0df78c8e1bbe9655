// Package keeper keeps an engine node's share of the partitions in the
// owners bucket (docs/engine.md §6.1): it announces the node with a
// heartbeat, watches the other nodes and the leases, and does what
// ownership.Decide plans — creates leases on free partitions and starts
// them, stops the ones over its quota and lets their leases go — while
// renewing what it holds. Expiry is the server's: a key not rewritten for
// the bucket's TTL (the failover) expires, and the watch hears of it. A
// holder that has not renewed a lease for 3/4 of the failover stops that
// partition, so it has stopped before any other node can take it.
//
// Expiry is also judged on the server's clock, never this node's: a
// heartbeat or lease whose server timestamp is a failover or more older
// than the newest the watch has shown is stale, whether or not its
// expiry was heard. A replica that missed an expiry (a NATS node
// restarted after a SIGKILL has been seen to serve a dead node's
// heartbeat to new watchers for minutes) so cannot keep a dead node
// counted, or a partition held, in a new node's view.
//
//	k := keeper.New(keeper.Config{KV: owners, Node: keeper.Node{ID: id, Partitions: 8},
//		Take: start, Release: stop, Unpin: unpin})
//	go k.Run(ctx) // until ctx ends; then it hands everything over
package keeper

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetbpm/jetbpm/engine/ownership"
	"github.com/jetbpm/jetbpm/streams"
)

// Node describes an engine node in its heartbeat.
type Node struct {
	ID         string    `json:"id"`
	Host       string    `json:"host,omitempty"`
	PID        int       `json:"pid,omitempty"`
	Version    string    `json:"version,omitempty"`
	Started    time.Time `json:"started"`
	Partitions int       `json:"partitions"` // the store's partition count, as this node read it
	// Holds are the partitions the node held at its last heartbeat.
	Holds []int `json:"holds"`
}

// Lease is a partition's lease record.
type Lease struct {
	Node  string    `json:"node"`
	Since time.Time `json:"since"`
}

// Config configures a Keeper.
type Config struct {
	// KV is the owners bucket (streams.OwnersBucket); its TTL is the
	// failover.
	KV jetstream.KeyValue
	// Node is this node; Node.ID and Node.Partitions must be set.
	Node Node
	// Take starts stepping partition p, held from lease revision epoch
	// on; it returns at once.
	Take func(p int, epoch uint64)
	// Release stops stepping partition p and returns when the batches in
	// hand are finished.
	Release func(p int)
	// Unpin unpins partition p's consumers, so the next node to pull
	// them is pinned at once.
	Unpin func(ctx context.Context, p int) error
	// Log receives the keeper's records (default slog.Default()).
	Log *slog.Logger
	// Now is the wall clock for the times the keeper records — when the
	// node started, when it took a lease — for people to read (default
	// time.Now). No decision reads it: expiry is the server's, and the
	// self-fence counts on the monotonic clock.
	Now func() time.Time
}

// holding is a lease this node holds.
type holding struct {
	rev uint64
	// acked is when the last renewal the server acknowledged was sent
	// (monotonic).
	acked time.Time
	// releasing: Release runs; fenced: the lease is lost or stale, so
	// once released it is neither unpinned nor deleted.
	releasing, fenced bool
}

// A Keeper keeps one node's share of the partitions. Run drives it.
type Keeper struct {
	cfg      Config
	log      *slog.Logger
	failover time.Duration
	released chan int
	// ready is closed once the keeper has acted on a full view of the
	// bucket for the first time, or failed to start (err).
	ready     chan struct{}
	readyOnce sync.Once
	err       error

	mu      sync.Mutex
	nodes   map[string]Node
	leases  map[int]Lease
	holding map[int]*holding
	// written is the server's timestamp of each key's latest entry the
	// watch showed, newest the latest of all: the server's "now" as far
	// as this node knows it.
	written map[string]time.Time
	newest  time.Time
}

// New returns a keeper for cfg; Run starts it.
func New(cfg Config) (*Keeper, error) {
	switch {
	case cfg.KV == nil || cfg.Take == nil || cfg.Release == nil || cfg.Unpin == nil:
		return nil, errors.New("keeper: KV, Take, Release and Unpin are required")
	case cfg.Node.ID == "" || cfg.Node.Partitions < 1:
		return nil, fmt.Errorf("keeper: node id %q and partitions %d: both are required", cfg.Node.ID, cfg.Node.Partitions)
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Node.Started.IsZero() {
		cfg.Node.Started = cfg.Now().UTC()
	}
	return &Keeper{
		cfg: cfg, log: cfg.Log.With("node", cfg.Node.ID), released: make(chan int), ready: make(chan struct{}),
		nodes: map[string]Node{}, leases: map[int]Lease{}, holding: map[int]*holding{}, written: map[string]time.Time{},
	}, nil
}

// Run keeps the node's share until ctx ends, then hands every partition
// it holds over (stops it, unpins it, deletes its lease) and deletes its
// heartbeat. It returns an error only when it cannot start: the bucket
// cannot be read.
func (k *Keeper) Run(ctx context.Context) (err error) {
	defer func() {
		if err != nil {
			k.err = err
			k.readyOnce.Do(func() { close(k.ready) })
		}
	}()
	status, err := k.cfg.KV.Status(ctx)
	if err != nil {
		return fmt.Errorf("keeper: bucket %s: %w", streams.OwnersBucket, err)
	}
	if k.failover = status.TTL(); k.failover <= 0 {
		return fmt.Errorf("keeper: bucket %s has no TTL; its keys would never expire", streams.OwnersBucket)
	}
	watchCtx, stopWatch := context.WithCancel(context.Background())
	defer stopWatch()
	w, err := k.cfg.KV.WatchAll(watchCtx)
	if err != nil {
		return fmt.Errorf("keeper: watch %s: %w", streams.OwnersBucket, err)
	}
	k.heartbeat()
	tick := time.NewTicker(k.failover / 8)
	defer tick.Stop()
	lastRenew := time.Now()
	synced := false
	for {
		var updates <-chan jetstream.KeyValueEntry
		if w != nil {
			updates = w.Updates()
		}
		select {
		case <-ctx.Done():
			k.handOver(w)
			return nil
		case e, ok := <-updates:
			switch {
			case !ok:
				// The watch ended (the connection closed or the server
				// went away); a tick watches again. Renewals, and the
				// fence, go on meanwhile.
				k.log.Warn("owners watch ended; watching again")
				w, synced = nil, false
			case e == nil:
				synced = true
			default:
				k.apply(e)
			}
		case p := <-k.released:
			k.finishRelease(p)
		case <-tick.C:
			if time.Since(lastRenew) >= k.failover/4 {
				lastRenew = time.Now()
				k.renew()
				k.heartbeat()
			}
			k.fence()
			if w == nil {
				if w, err = k.cfg.KV.WatchAll(watchCtx); err != nil {
					w = nil
				}
			}
		}
		if synced {
			k.act()
			k.readyOnce.Do(func() { close(k.ready) })
		}
	}
}

// Ready waits until the keeper has acted on a full view of the bucket
// once — taken the free partitions of its quota, on a fresh store all of
// them — or ctx ends; an error says why the keeper could not start.
func (k *Keeper) Ready(ctx context.Context) error {
	select {
	case <-k.ready:
		return k.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// apply records a change the watch saw.
func (k *Keeper) apply(e jetstream.KeyValueEntry) {
	k.mu.Lock()
	defer k.mu.Unlock()
	gone := e.Operation() != jetstream.KeyValuePut
	k.written[e.Key()] = e.Created()
	if e.Created().After(k.newest) {
		k.newest = e.Created()
	}
	switch key := e.Key(); {
	case strings.HasPrefix(key, streams.OwnerNodePrefix):
		id := strings.TrimPrefix(key, streams.OwnerNodePrefix)
		var n Node
		if gone || json.Unmarshal(e.Value(), &n) != nil {
			delete(k.nodes, id)
			delete(k.written, key) // node ids are many over time; partitions are few
			return
		}
		k.nodes[id] = n
	case strings.HasPrefix(key, streams.OwnerPartitionPrefix):
		p, err := strconv.Atoi(strings.TrimPrefix(key, streams.OwnerPartitionPrefix))
		if err != nil {
			return
		}
		var l Lease
		if gone || json.Unmarshal(e.Value(), &l) != nil {
			delete(k.leases, p)
		} else {
			k.leases[p] = l
		}
		// A lease of ours that expired, or that another node now has,
		// is lost: stop stepping it at once.
		if h := k.holding[p]; h != nil && !h.fenced && (gone || l.Node != k.cfg.Node.ID) && e.Revision() >= h.rev {
			k.fenceLocked(p, h, "its lease is gone")
		}
	}
}

// stale reports whether key's latest entry is a failover or more older
// than the newest entry seen, on the server's clock; k.mu is held.
func (k *Keeper) stale(key string) bool {
	return k.newest.Sub(k.written[key]) >= k.failover
}

// freshNodes are the nodes whose heartbeats are not stale; k.mu is held.
func (k *Keeper) freshNodes() map[string]Node {
	out := make(map[string]Node, len(k.nodes))
	for id, n := range k.nodes {
		if !k.stale(streams.OwnerNodeKey(id)) {
			out[id] = n
		}
	}
	return out
}

// freshLeases are the leases that are not stale; k.mu is held.
func (k *Keeper) freshLeases() map[int]Lease {
	out := make(map[int]Lease, len(k.leases))
	for p, l := range k.leases {
		if !k.stale(streams.OwnerPartitionKey(p)) {
			out[p] = l
		}
	}
	return out
}

// act does what ownership.Decide plans for this node.
func (k *Keeper) act() {
	k.mu.Lock()
	var live []string
	for id, n := range k.freshNodes() {
		if n.Partitions == k.cfg.Node.Partitions {
			live = append(live, id)
		}
	}
	holders := make(map[int]string, len(k.leases))
	for p, l := range k.freshLeases() {
		holders[p] = l.Node
	}
	for p := range k.holding {
		holders[p] = k.cfg.Node.ID // whatever the watch has not shown yet
	}
	plan := ownership.Decide(k.cfg.Node.ID, live, holders, k.cfg.Node.Partitions)
	changed := false
	for _, p := range plan.Release {
		if h := k.holding[p]; h != nil && !h.releasing {
			h.releasing, changed = true, true
			k.log.Info("handing a partition over", "partition", p, "quota", plan.Quota)
			go k.release(p)
		}
	}
	held := 0
	for _, h := range k.holding {
		if !h.releasing {
			held++
		}
	}
	k.mu.Unlock()
	for _, p := range plan.Take {
		if held >= plan.Quota {
			break
		}
		if k.take(p) {
			held++
			changed = true
		}
	}
	if changed {
		k.heartbeat() // the others see what it holds now
	}
}

// take creates partition p's lease and starts the partition; false when
// another node was first or the bucket did not answer.
func (k *Keeper) take(p int) bool {
	now, since := time.Now(), k.cfg.Now().UTC()
	value, _ := json.Marshal(Lease{Node: k.cfg.Node.ID, Since: since})
	ctx, cancel := context.WithTimeout(context.Background(), k.failover/4)
	rev, err := k.cfg.KV.Create(ctx, streams.OwnerPartitionKey(p), value)
	cancel()
	if err != nil {
		if !errors.Is(err, jetstream.ErrKeyExists) {
			k.log.Warn("could not take a free partition", "partition", p, "err", err)
		}
		return false
	}
	k.mu.Lock()
	k.holding[p] = &holding{rev: rev, acked: now}
	k.leases[p] = Lease{Node: k.cfg.Node.ID, Since: since}
	k.written[streams.OwnerPartitionKey(p)] = k.newest // written just now: as new as anything seen
	k.mu.Unlock()
	// The node that held it before may have died holding the pin.
	ctx, cancel = context.WithTimeout(context.Background(), k.failover/4)
	if err := k.cfg.Unpin(ctx, p); err != nil {
		k.log.Warn("could not unpin a partition taken; its consumers pin this node once the old pin expires", "partition", p, "err", err)
	}
	cancel()
	k.log.Info("took a partition", "partition", p, "epoch", rev)
	k.cfg.Take(p, rev)
	return true
}

// release stops partition p and tells the loop.
func (k *Keeper) release(p int) {
	k.cfg.Release(p)
	k.released <- p
}

// finishRelease lets go of partition p, whose Release returned: unless
// its lease was lost meanwhile, its consumers are unpinned and its lease
// deleted at the revision this node wrote.
func (k *Keeper) finishRelease(p int) {
	k.mu.Lock()
	h := k.holding[p]
	delete(k.holding, p)
	k.mu.Unlock()
	if h == nil || h.fenced {
		return
	}
	k.letGo(p, h.rev)
}

func (k *Keeper) letGo(p int, rev uint64) {
	ctx, cancel := context.WithTimeout(context.Background(), k.failover/4)
	defer cancel()
	if err := k.cfg.Unpin(ctx, p); err != nil {
		k.log.Warn("could not unpin a partition let go of; its pin expires", "partition", p, "err", err)
	}
	if err := k.cfg.KV.Delete(ctx, streams.OwnerPartitionKey(p), jetstream.LastRevision(rev)); err != nil {
		k.log.Warn("could not delete a partition's lease; it expires", "partition", p, "err", err)
		return
	}
	k.mu.Lock()
	if l, ok := k.leases[p]; ok && l.Node == k.cfg.Node.ID {
		delete(k.leases, p)
	}
	k.mu.Unlock()
	k.log.Info("let a partition go", "partition", p)
}

// renew rewrites every lease held at the revision last written.
func (k *Keeper) renew() {
	k.mu.Lock()
	held := maps.Clone(k.holding)
	k.mu.Unlock()
	for _, p := range slices.Sorted(maps.Keys(held)) {
		h := held[p]
		if h.fenced {
			continue
		}
		sent := time.Now()
		value, _ := json.Marshal(Lease{Node: k.cfg.Node.ID, Since: k.since(p)})
		ctx, cancel := context.WithTimeout(context.Background(), k.failover/4)
		rev, err := k.cfg.KV.Update(ctx, streams.OwnerPartitionKey(p), value, h.rev)
		cancel()
		k.mu.Lock()
		switch {
		case err == nil:
			h.rev, h.acked = rev, sent
		case streams.IsConflict(err):
			k.fenceLocked(p, h, "its lease was changed by another node or expired")
		default:
			k.log.Warn("could not renew a partition's lease", "partition", p, "err", err)
		}
		k.mu.Unlock()
	}
}

func (k *Keeper) since(p int) time.Time {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.leases[p].Since
}

// fence stops every partition whose last acknowledged renewal was sent
// 3/4 of the failover ago or more: its lease may expire any moment.
func (k *Keeper) fence() {
	k.mu.Lock()
	defer k.mu.Unlock()
	for p, h := range k.holding {
		if !h.fenced && time.Since(h.acked) >= 3*k.failover/4 {
			k.fenceLocked(p, h, fmt.Sprintf("its lease was not renewed for %s", time.Since(h.acked).Round(time.Millisecond)))
		}
	}
}

// fenceLocked stops partition p, whose lease this node can no longer
// count on; k.mu is held.
func (k *Keeper) fenceLocked(p int, h *holding, why string) {
	h.fenced = true
	k.log.Error("stopping a partition: "+why, "partition", p)
	if !h.releasing {
		h.releasing = true
		go k.release(p)
	}
}

// heartbeat announces the node and what it holds.
func (k *Keeper) heartbeat() {
	n := k.cfg.Node
	k.mu.Lock()
	for p, h := range k.holding {
		if !h.releasing {
			n.Holds = append(n.Holds, p)
		}
	}
	k.mu.Unlock()
	slices.Sort(n.Holds)
	value, _ := json.Marshal(n)
	ctx, cancel := context.WithTimeout(context.Background(), k.failover/4)
	defer cancel()
	if _, err := k.cfg.KV.Put(ctx, streams.OwnerNodeKey(n.ID), value); err != nil {
		k.log.Warn("heartbeat not written", "err", err)
	}
}

// handOver lets go of every partition held, then of the node's
// heartbeat, so the others take over at once.
func (k *Keeper) handOver(w jetstream.KeyWatcher) {
	if w != nil {
		_ = w.Stop()
	}
	k.mu.Lock()
	var pending int
	for p, h := range k.holding {
		if !h.releasing {
			h.releasing = true
			go k.release(p)
		}
		pending++
	}
	k.mu.Unlock()
	for range pending {
		k.finishRelease(<-k.released)
	}
	ctx, cancel := context.WithTimeout(context.Background(), k.failover/4)
	defer cancel()
	if err := k.cfg.KV.Delete(ctx, streams.OwnerNodeKey(k.cfg.Node.ID)); err != nil {
		k.log.Warn("heartbeat not deleted; it expires", "err", err)
	}
}

// ID is this node's id.
func (k *Keeper) ID() string { return k.cfg.Node.ID }

// Holds reports whether the node holds partition p, and under which
// epoch.
func (k *Keeper) Holds(p int) (epoch uint64, ok bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	h := k.holding[p]
	if h == nil || h.releasing {
		return 0, false
	}
	return h.rev, true
}

// Holder returns the node holding partition p's lease, as far as the
// keeper has been shown (a stale lease counts as none).
func (k *Keeper) Holder(p int) (node string, ok bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	l, ok := k.leases[p]
	if !ok || k.stale(streams.OwnerPartitionKey(p)) {
		return "", false
	}
	return l.Node, true
}

// View is what a keeper knows of the cluster: the live nodes and the
// leases, stale ones left out.
type View struct {
	Nodes  []Node
	Leases map[int]Lease
}

// View returns what the keeper knows of the cluster now.
func (k *Keeper) View() View {
	k.mu.Lock()
	defer k.mu.Unlock()
	v := View{Leases: k.freshLeases()}
	nodes := k.freshNodes()
	for _, id := range slices.Sorted(maps.Keys(nodes)) {
		v.Nodes = append(v.Nodes, nodes[id])
	}
	return v
}
