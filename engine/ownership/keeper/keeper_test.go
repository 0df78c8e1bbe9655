package keeper_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetbpm/jetbpm/engine/ownership"
	"github.com/jetbpm/jetbpm/engine/ownership/keeper"
	"github.com/jetbpm/jetbpm/internal/testwait"
	"github.com/jetbpm/jetbpm/streams"
	"github.com/jetbpm/jetbpm/streams/streamstest"
)

// stepping records which node steps which partition, and fails the test
// when a node starts a partition another has not stopped.
type stepping struct {
	t      *testing.T
	mu     sync.Mutex
	by     map[int]string
	epochs map[int]uint64
}

func newStepping(t *testing.T) *stepping {
	return &stepping{t: t, by: map[int]string{}, epochs: map[int]uint64{}}
}

func (s *stepping) start(node string, p int, epoch uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if other := s.by[p]; other != "" {
		s.t.Errorf("%s starts partition %d while %s steps it", node, p, other)
	}
	if epoch <= s.epochs[p] {
		s.t.Errorf("%s starts partition %d at epoch %d, after epoch %d", node, p, epoch, s.epochs[p])
	}
	s.by[p], s.epochs[p] = node, epoch
}

func (s *stepping) stop(node string, p int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.by[p] != node {
		s.t.Errorf("%s stops partition %d, which %q steps", node, p, s.by[p])
	}
	delete(s.by, p)
}

// counts returns how many partitions each node steps.
func (s *stepping) counts() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]int{}
	for _, n := range s.by {
		out[n]++
	}
	return out
}

type node struct {
	id     string
	nc     *nats.Conn
	stop   context.CancelFunc
	done   chan struct{}
	keeper *keeper.Keeper
}

// startNode runs a keeper for node id on a connection of its own.
func startNode(t *testing.T, env *streamstest.Env, s *stepping, id string) *node {
	t.Helper()
	return startNodeWith(t, env, s, id, func(*keeper.Config) {})
}

// startNodeWith is startNode with the keeper's configuration changed.
func startNodeWith(t *testing.T, env *streamstest.Env, s *stepping, id string, change func(*keeper.Config)) *node {
	t.Helper()
	nc := env.NewConn(t)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	kv, err := js.KeyValue(context.Background(), streams.OwnersBucket)
	if err != nil {
		t.Fatal(err)
	}
	cfg := keeper.Config{
		KV: kv, Node: keeper.Node{ID: id, Partitions: env.Layout.Partitions},
		Take:    func(p int, epoch uint64) { s.start(id, p, epoch) },
		Release: func(p int) { s.stop(id, p) },
		Unpin:   func(context.Context, int) error { return nil },
		Log:     slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	}
	change(&cfg)
	k, err := keeper.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	n := &node{id: id, nc: nc, stop: cancel, done: make(chan struct{}), keeper: k}
	go func() {
		defer close(n.done)
		if err := k.Run(ctx); err != nil {
			t.Errorf("keeper %s: %v", id, err)
		}
	}()
	t.Cleanup(func() { cancel(); <-n.done })
	return n
}

// balanced waits until the nodes step every partition, each its quota.
func balanced(t *testing.T, s *stepping, p int, within time.Duration, nodes ...*node) {
	t.Helper()
	var ids []string
	for _, n := range nodes {
		ids = append(ids, n.id)
	}
	testwait.Until(t, within, fmt.Sprintf("%v to share %d partitions", ids, p), func() error {
		counts := s.counts()
		total := 0
		for _, id := range ids {
			if q := ownership.Quota(id, ids, p); counts[id] != q {
				return fmt.Errorf("%s steps %d, quota %d (%v)", id, counts[id], q, counts)
			}
			total += counts[id]
		}
		if total != p {
			return fmt.Errorf("%d of %d partitions stepped (%v)", total, p, counts)
		}
		return nil
	})
}

// Nodes that join share the partitions by quota, and a node that stops
// hands its partitions over at once — long before their leases could
// expire (the failover is 10 s) — and no partition is ever stepped by
// two nodes.
func TestKeepersShareAndHandOver(t *testing.T) {
	env := streamstest.Start(t, streamstest.WithPartitions(8))
	s := newStepping(t)
	a := startNode(t, env, s, "a")
	balanced(t, s, 8, 5*time.Second, a)
	b := startNode(t, env, s, "b")
	balanced(t, s, 8, 5*time.Second, a, b)
	c := startNode(t, env, s, "c")
	balanced(t, s, 8, 5*time.Second, a, b, c)

	stopped := time.Now()
	b.stop()
	<-b.done
	balanced(t, s, 8, 5*time.Second, a, c)
	t.Logf("b's partitions moved %s after it stopped", time.Since(stopped).Round(time.Millisecond))
	// a's view follows the bucket's watch.
	testwait.Until(t, 5*time.Second, "a to see the 8 leases of a and c", func() error {
		v := a.keeper.View()
		for _, l := range v.Leases {
			if l.Node != "a" && l.Node != "c" {
				return fmt.Errorf("a lease of %s: %+v", l.Node, v)
			}
		}
		if len(v.Leases) != 8 || len(v.Nodes) != 2 {
			return fmt.Errorf("a sees %d leases and %d nodes: %+v", len(v.Leases), len(v.Nodes), v)
		}
		return nil
	})
}

// A node cut off from NATS stops its partitions before their leases
// expire; the others take them after the failover, and never while the
// cut-off node still steps them.
func TestKeeperFencesItselfWhenCutOff(t *testing.T) {
	env := streamstest.Start(t, streamstest.WithPartitions(4), streamstest.WithFastFailover(time.Second))
	s := newStepping(t)
	a := startNode(t, env, s, "a")
	balanced(t, s, 4, 5*time.Second, a)
	b := startNode(t, env, s, "b")
	balanced(t, s, 4, 5*time.Second, a, b)

	cut := time.Now()
	a.nc.Close()
	balanced(t, s, 4, 10*time.Second, b)
	t.Logf("a's partitions moved to b %s after a was cut off (failover 1s)", time.Since(cut).Round(time.Millisecond))
}

// Nodes whose wall clocks are minutes apart share the partitions as any
// do: a node ten minutes ahead, which reads every lease as ten minutes
// old, takes only its quota, by hand-over, never a partition another
// steps (the stepping record fails the test on any overlap); one ten
// minutes behind does the same; and when the fast node stops, its
// partitions go to the others at once.
func TestKeepersIgnoreTheirWallClocks(t *testing.T) {
	env := streamstest.Start(t, streamstest.WithPartitions(8))
	s := newStepping(t)
	skewed := func(d time.Duration) func(*keeper.Config) {
		return func(c *keeper.Config) { c.Now = func() time.Time { return time.Now().Add(d) } }
	}
	a := startNode(t, env, s, "a")
	balanced(t, s, 8, 5*time.Second, a)
	ahead := startNodeWith(t, env, s, "ahead", skewed(10*time.Minute))
	balanced(t, s, 8, 5*time.Second, a, ahead)
	behind := startNodeWith(t, env, s, "behind", skewed(-10*time.Minute))
	balanced(t, s, 8, 5*time.Second, a, ahead, behind)
	for _, l := range a.keeper.View().Leases {
		if d := time.Since(l.Since); l.Node == "ahead" && d > -9*time.Minute {
			t.Errorf("a lease of ahead since %s, want its own clock's (ten minutes ahead)", l.Since)
		}
	}
	ahead.stop()
	<-ahead.done
	balanced(t, s, 8, 5*time.Second, a, behind)
}

// A replica that missed an expiry can show a new watcher a dead node's
// heartbeat and leases long after they expired (seen with a NATS node
// restarted after a SIGKILL, TestClusterLosesAnEngineAndANATSNode). A
// keeper judges them by the server's timestamps: entries a failover or
// more older than the newest it has seen are stale, so a node alone with
// such ghosts takes every partition, the ghost's too, and does not list
// the ghost.
func TestKeeperIgnoresStaleEntries(t *testing.T) {
	env := streamstest.Start(t, streamstest.WithPartitions(8), streamstest.WithFastFailover(time.Second))
	s := newStepping(t)
	long := time.Now().Add(-time.Minute)
	ghosts := []jetstream.KeyValueEntry{
		entry{key: streams.OwnerNodeKey("ghost"), value: `{"id":"ghost","partitions":8,"holds":[3]}`, created: long},
		entry{key: streams.OwnerPartitionKey(3), value: `{"node":"ghost"}`, created: long},
	}
	a := startNodeWith(t, env, s, "a", func(c *keeper.Config) { c.KV = haunted{c.KV, ghosts} })
	balanced(t, s, 8, 5*time.Second, a)
	v := a.keeper.View()
	if len(v.Nodes) != 1 || v.Nodes[0].ID != "a" || v.Leases[3].Node != "a" {
		t.Errorf("a's view %+v, want a alone holding partition 3", v)
	}
}

// haunted is a bucket whose watches first show ghost entries.
type haunted struct {
	jetstream.KeyValue
	ghosts []jetstream.KeyValueEntry
}

func (h haunted) WatchAll(ctx context.Context, opts ...jetstream.WatchOpt) (jetstream.KeyWatcher, error) {
	w, err := h.KeyValue.WatchAll(ctx, opts...)
	if err != nil {
		return nil, err
	}
	out := make(chan jetstream.KeyValueEntry)
	go func() {
		defer close(out)
		for _, g := range h.ghosts {
			out <- g
		}
		for e := range w.Updates() {
			out <- e
		}
	}()
	return hauntedWatch{w, out}, nil
}

type hauntedWatch struct {
	jetstream.KeyWatcher
	updates chan jetstream.KeyValueEntry
}

func (w hauntedWatch) Updates() <-chan jetstream.KeyValueEntry { return w.updates }

// entry is a bucket entry made up by a test.
type entry struct {
	key, value string
	created    time.Time
}

func (e entry) Bucket() string                  { return streams.OwnersBucket }
func (e entry) Key() string                     { return e.key }
func (e entry) Value() []byte                   { return []byte(e.value) }
func (e entry) Revision() uint64                { return 1 }
func (e entry) Created() time.Time              { return e.created }
func (e entry) Delta() uint64                   { return 0 }
func (e entry) Operation() jetstream.KeyValueOp { return jetstream.KeyValuePut }
