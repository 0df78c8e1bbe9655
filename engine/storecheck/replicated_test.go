package storecheck_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetbpm/jetbpm/engine/lost"
	"github.com/jetbpm/jetbpm/engine/storecheck"
	"github.com/jetbpm/jetbpm/streams"
	"github.com/jetbpm/jetbpm/streams/streamstest"
)

// racingMeta is a meta bucket another node writes the marks into right
// after this node read them, before each of the reads named in at: this
// node's compare-and-set then loses.
type racingMeta struct {
	jetstream.KeyValue
	t     *testing.T
	other lost.Marks

	mu    sync.Mutex
	reads int
	at    map[int]bool
}

// storedMarks reads the marks in the meta bucket.
func storedMarks(t *testing.T, ctx context.Context, meta jetstream.KeyValue) lost.Marks {
	t.Helper()
	entry, err := meta.Get(ctx, streams.MetaMarksKey)
	if err != nil {
		t.Fatal(err)
	}
	m, err := lost.DecodeFile(entry.Value())
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func (m *racingMeta) Get(ctx context.Context, key string) (jetstream.KeyValueEntry, error) {
	entry, err := m.KeyValue.Get(ctx, key)
	m.mu.Lock()
	m.reads++
	race := key == streams.MetaMarksKey && m.at[m.reads]
	m.mu.Unlock()
	if race {
		if _, perr := m.KeyValue.Put(ctx, key, m.other.EncodeFile()); perr != nil {
			m.t.Errorf("the other node's write: %v", perr)
		}
	}
	return entry, err
}

// lossCounter is a meta bucket that counts the error codes of the
// compare-and-sets it passes on.
type lossCounter struct {
	jetstream.KeyValue
	mu    *sync.Mutex
	codes map[jetstream.ErrorCode]int
}

func (m lossCounter) count(err error) {
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) {
		m.mu.Lock()
		m.codes[apiErr.ErrorCode]++
		m.mu.Unlock()
	}
}

func (m lossCounter) Create(ctx context.Context, key string, value []byte, opts ...jetstream.KVCreateOpt) (uint64, error) {
	rev, err := m.KeyValue.Create(ctx, key, value, opts...)
	m.count(err)
	return rev, err
}

func (m lossCounter) Update(ctx context.Context, key string, value []byte, last uint64) (uint64, error) {
	rev, err := m.KeyValue.Update(ctx, key, value, last)
	m.count(err)
	return rev, err
}

// On a replicated store a lost compare-and-set is answered with one of
// two codes: 10071 when the other write is stored, 10164 when it is still
// in flight through Raft. Nodes starting together on a 3-node cluster
// write the marks at once; a node that took 10164 for a failure refused
// to start (CI, TestClusterLosesAnEngineAndANATSNode: "storecheck: write
// marks: ... wrong last sequence"). Lost Creates and Updates are tried
// again, and the marks written hold every node's.
func TestMarksOnAReplicatedStoreSurviveOtherNodesWrites(t *testing.T) {
	ctx := bounded(t)
	c := streamstest.StartCluster(t, 3)
	nc := c.Connect()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	bucket := func(name string) (kv jetstream.KeyValue) {
		c.Place("bucket "+name, func(ctx context.Context) (err error) {
			kv, err = js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: name, Replicas: 3})
			return err
		})
		return kv
	}
	meta, lostKV, instances := bucket(streams.MetaBucket), bucket(streams.LostBucket), bucket(streams.InstancesBucket)
	other := lost.Marks{Streams: map[string]uint64{"KV_other_node": 7}, At: time.Now()}
	racing := &racingMeta{KeyValue: meta, t: t, other: other, at: map[int]bool{1: true, 3: true}}
	check := storecheck.New(storecheck.Config{JS: js, Meta: racing, Lost: lostKV})

	put := func() uint64 {
		rev, err := instances.Put(ctx, "i1", []byte("{}"))
		if err != nil {
			t.Fatal(err)
		}
		return rev
	}
	for round, want := range []string{"the key's Create lost", "an Update lost"} {
		seq := put()
		if err := check.Mark(ctx); err != nil {
			t.Fatalf("round %d (%s): %v", round+1, want, err)
		}
		if got := storedMarks(t, ctx, meta); got.Streams["KV_other_node"] != 7 || got.Streams[streams.KVStream(streams.InstancesBucket)] != seq {
			t.Fatalf("round %d (%s): marks %v, want the other node's and %s at %d", round+1, want, got.Streams, streams.KVStream(streams.InstancesBucket), seq)
		}
	}
	racing.mu.Lock()
	if racing.reads != 4 {
		t.Fatalf("%d reads of the marks, want 4 (each round lost one compare-and-set and won the next)", racing.reads)
	}
	racing.mu.Unlock()

	// Three nodes mark at once, round after round, each after a write of
	// its own, until the server has answered both codes (bounded).
	const nodes, maxRounds = 3, 300
	var mu sync.Mutex
	codes := map[jetstream.ErrorCode]int{}
	raced := func() bool {
		mu.Lock()
		defer mu.Unlock()
		return codes[jetstream.JSErrCodeStreamWrongLastSequence] > 0 && codes[jetstream.JSErrCodeStreamWrongLastSequenceConstant] > 0
	}
	var wg sync.WaitGroup
	for n := range nodes {
		node := storecheck.New(storecheck.Config{JS: js, Meta: lossCounter{KeyValue: meta, mu: &mu, codes: codes}, Lost: lostKV})
		wg.Go(func() {
			for round := 0; round < maxRounds && !raced(); round++ {
				if _, err := instances.Put(ctx, fmt.Sprintf("node%d", n), []byte("{}")); err != nil {
					t.Error(err)
					return
				}
				if err := node.Mark(ctx); err != nil {
					t.Errorf("node %d, round %d: %v", n, round, err)
					return
				}
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	if !raced() {
		t.Fatalf("the server answered the compare-and-sets of %d nodes over %d rounds with %v: the nodes never raced, so this proves nothing", nodes, maxRounds, codes)
	}
	t.Logf("lost compare-and-sets by code: %v", codes)
	info, err := js.Stream(ctx, streams.KVStream(streams.InstancesBucket))
	if err != nil {
		t.Fatal(err)
	}
	if final, last := storedMarks(t, ctx, meta), info.CachedInfo().State.LastSeq; final.Streams[streams.KVStream(streams.InstancesBucket)] != last || final.Streams["KV_other_node"] != 7 {
		t.Fatalf("marks %v after the race, want %s at %d (its last sequence) and the other node's", final.Streams, streams.KVStream(streams.InstancesBucket), last)
	}
}
