package engine

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetbpm/jetbpm/engine/checkpoint"
	"github.com/jetbpm/jetbpm/engine/instance"
	"github.com/jetbpm/jetbpm/streams"
)

// instanceIndex is one engine node's view of the instances bucket, so that
// Instances lists without reading every checkpoint (docs/engine.md,
// "Listing instances"). An ordered, headers-only consumer of the bucket's
// stream feeds it: first the last message of every key (so a node that
// starts, or restarts, rebuilds it), then every write as it happens. It
// keeps, per instance, what filtering and ordering need (process, status,
// start time), taken from the summary headers of the checkpoint message;
// a list then reads only the checkpoints of the page it returns.
//
// The index is derived and never authoritative: a list re-checks its filter
// against each checkpoint it reads, so an instance whose status moved on
// since the index heard of it is left out rather than shown wrongly. Before
// it picks, a list waits (bounded) until the index has read the bucket up
// to the newest message it held when the list began, so a list sees every
// write made before it began.
type instanceIndex struct {
	js     jetstream.JetStream
	kv     jetstream.KeyValue
	stream string
	log    *slog.Logger

	mu      sync.Mutex
	entries map[string]*instanceEntry // by instance id
	seq     uint64                    // the last stream sequence read
	moved   chan struct{}             // closed (and replaced) whenever seq grows
	st      jetstream.Stream          // the bucket's stream, once looked up
}

// instanceEntry is what the index keeps of one instance.
type instanceEntry struct {
	id, process string
	status      instance.Status
	started     int64 // Unix nanoseconds
}

func newInstanceIndex(js jetstream.JetStream, kv jetstream.KeyValue, log *slog.Logger) *instanceIndex {
	return &instanceIndex{js: js, kv: kv, stream: "KV_" + streams.InstancesBucket, log: log,
		entries: map[string]*instanceEntry{}, moved: make(chan struct{})}
}

// run follows the bucket until ctx ends. A consumer that ends otherwise is
// created again on an empty index: keys removed meanwhile would otherwise
// stay.
func (ix *instanceIndex) run(ctx context.Context) {
	for {
		err := ix.follow(ctx)
		if ctx.Err() != nil {
			return
		}
		ix.log.Warn("instance index: the consumer of the instances bucket ended; rebuilding the index", "bucket", streams.InstancesBucket, "err", err)
		ix.mu.Lock()
		ix.entries, ix.seq, ix.st = map[string]*instanceEntry{}, 0, nil
		ix.mu.Unlock()
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Second):
		}
	}
}

func (ix *instanceIndex) follow(ctx context.Context) error {
	cons, err := ix.js.OrderedConsumer(ctx, ix.stream, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{"$KV." + streams.InstancesBucket + ".>"},
		DeliverPolicy:  jetstream.DeliverLastPerSubjectPolicy,
		HeadersOnly:    true,
	})
	if err != nil {
		return err
	}
	it, err := cons.Messages()
	if err != nil {
		return err
	}
	stop := context.AfterFunc(ctx, it.Stop)
	defer stop()
	defer it.Stop()
	for {
		m, err := it.Next()
		if err != nil {
			return err
		}
		ix.apply(m)
	}
}

// apply takes one message of the bucket: a checkpoint, or the marker of a
// checkpoint deleted or expired.
func (ix *instanceIndex) apply(m jetstream.Msg) {
	md, err := m.Metadata()
	if err != nil {
		return
	}
	id := m.Subject()[len("$KV."+streams.InstancesBucket+"."):]
	h := m.Headers()
	var e *instanceEntry
	if h.Get("KV-Operation") == "" && h.Get(jetstream.MarkerReasonHeader) == "" {
		e = &instanceEntry{id: id, process: h.Get(checkpoint.HeaderProcess), status: instance.Status(h.Get(checkpoint.HeaderStatus))}
		e.started, _ = strconv.ParseInt(h.Get(checkpoint.HeaderStarted), 10, 64)
		if e.process == "" {
			// A checkpoint written before checkpoints carried a summary:
			// read it once.
			e = ix.readSummary(id)
		}
	}
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if e != nil {
		ix.entries[id] = e
	} else {
		delete(ix.entries, id)
	}
	if md.Sequence.Stream > ix.seq {
		ix.seq = md.Sequence.Stream
		close(ix.moved)
		ix.moved = make(chan struct{})
	}
}

func (ix *instanceIndex) readSummary(id string) *instanceEntry {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, _, err := checkpoint.New(ix.kv, 0).Get(ctx, id)
	if err != nil {
		if !errors.Is(err, ErrNotFound) {
			ix.log.Warn("instance index: skipping a checkpoint without a summary it cannot read", "instance", id, "err", err)
		}
		return nil
	}
	return &instanceEntry{id: id, process: s.ProcessID, status: checkpoint.Status(s), started: s.StartedAt.UnixNano()}
}

// lastSeq is the stream sequence of the newest message the bucket holds
// (0: none). Not the stream's last sequence: that may be a marker already
// expired, which the index will never read.
func (ix *instanceIndex) lastSeq(ctx context.Context) (uint64, error) {
	ix.mu.Lock()
	st := ix.st
	ix.mu.Unlock()
	if st == nil {
		var err error
		if st, err = ix.js.Stream(ctx, ix.stream); err != nil {
			return 0, fmt.Errorf("instances: bucket %s: %w", streams.InstancesBucket, err)
		}
		ix.mu.Lock()
		ix.st = st
		ix.mu.Unlock()
	}
	m, err := st.GetLastMsgForSubject(ctx, "$KV."+streams.InstancesBucket+".>")
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("instances: bucket %s: %w", streams.InstancesBucket, err)
	}
	return m.Sequence, nil
}

// sync waits until the index has read the bucket up to the newest message
// it holds now, bounded by maxIndexCatchUp.
func (ix *instanceIndex) sync(ctx context.Context) error {
	last, err := ix.lastSeq(ctx)
	if err != nil {
		return err
	}
	timer := time.NewTimer(maxIndexCatchUp)
	defer timer.Stop()
	for {
		ix.mu.Lock()
		seq, moved := ix.seq, ix.moved
		ix.mu.Unlock()
		if seq >= last {
			return nil
		}
		select {
		case <-moved:
		case <-ctx.Done():
			return fmt.Errorf("instances: this node's instance index is still reading bucket %s (at sequence %d of %d): %w", streams.InstancesBucket, seq, last, ctx.Err())
		case <-timer.C:
			return fmt.Errorf("instances: this node's instance index has not caught up with bucket %s within %s (at sequence %d of %d); is JetStream reachable?",
				streams.InstancesBucket, maxIndexCatchUp, seq, last)
		}
	}
}

// pick returns the ids of the instances matching f, newest first (then by
// id), at most f.Limit (0: all). It keeps the best Limit in a heap, so a
// page of a large index costs one pass and no full sort.
func (ix *instanceIndex) pick(f Filter) []string {
	ix.mu.Lock()
	h := instanceHeap{}
	for _, e := range ix.entries {
		switch {
		case f.ProcessID != "" && e.process != f.ProcessID || !f.matchStatus(e.status):
		case f.Limit <= 0 || len(h) < f.Limit:
			heap.Push(&h, e)
		case newer(e, h[0]):
			h[0] = e
			heap.Fix(&h, 0)
		}
	}
	ix.mu.Unlock()
	out := make([]string, len(h))
	for i := len(h) - 1; i >= 0; i-- {
		out[i] = heap.Pop(&h).(*instanceEntry).id
	}
	return out
}

// newer orders a list: newest first, then by id.
func newer(a, b *instanceEntry) bool {
	if a.started != b.started {
		return a.started > b.started
	}
	return a.id < b.id
}

// instanceHeap holds the best entries seen so far with the worst on top.
type instanceHeap []*instanceEntry

func (h instanceHeap) Len() int           { return len(h) }
func (h instanceHeap) Less(i, j int) bool { return newer(h[j], h[i]) }
func (h instanceHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *instanceHeap) Push(x any)        { *h = append(*h, x.(*instanceEntry)) }
func (h *instanceHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}

// bulkRead is the number of checkpoints from which a list reads them with
// one watch of the bucket rather than a request per checkpoint (a list
// without a limit always does).
const bulkRead = 500

// readEach reads the checkpoints of ids, one request each; nil for one
// that no longer exists.
func (e *Engine) readEach(ctx context.Context, ids []string) ([]*instance.State, error) {
	out := make([]*instance.State, len(ids))
	for i, id := range ids {
		s, _, err := e.store.Get(ctx, id)
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out[i] = s
	}
	return out, nil
}

// readAll reads the checkpoints of ids with one watch of the whole bucket,
// which streams the current checkpoint of every instance, and decodes
// those of ids; nil for one that no longer exists.
func (e *Engine) readAll(ctx context.Context, ids []string) ([]*instance.State, error) {
	at := make(map[string]int, len(ids))
	for i, id := range ids {
		at[id] = i
	}
	w, err := e.store.KV().WatchAll(ctx, jetstream.IgnoreDeletes())
	if err != nil {
		return nil, fmt.Errorf("instances: watch bucket %s: %w", streams.InstancesBucket, err)
	}
	defer func() { _ = w.Stop() }()
	out := make([]*instance.State, len(ids))
	for {
		var entry jetstream.KeyValueEntry
		var open bool
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("instances: reading bucket %s: %w", streams.InstancesBucket, ctx.Err())
		case entry, open = <-w.Updates():
		}
		if !open {
			return nil, fmt.Errorf("instances: the watch of bucket %s ended early", streams.InstancesBucket)
		}
		if entry == nil {
			return out, nil // every checkpoint stored when the watch began
		}
		i, ok := at[entry.Key()]
		if !ok {
			continue
		}
		var s instance.State
		if err := streams.Unmarshal(entry.Value(), &s); err != nil {
			return nil, fmt.Errorf("instance %s: decode checkpoint: %w", entry.Key(), err)
		}
		out[i] = &s
	}
}
