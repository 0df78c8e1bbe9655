package index

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
	"github.com/jetbpm/jetbpm/engine/errdefs"
	"github.com/jetbpm/jetbpm/engine/instance"
	"github.com/jetbpm/jetbpm/streams"
)

// MaxCatchUp bounds how long a list waits for a node's index to catch up
// with its bucket before it fails, naming how far the index got.
const MaxCatchUp = 30 * time.Second

// Instances is one engine node's view of the instances bucket: the
// summary of every instance, for lists. Run feeds it; Sync and Pick
// answer a list. It is safe for concurrent use.
type Instances struct {
	js     jetstream.JetStream
	store  *checkpoint.Store
	stream string
	log    *slog.Logger

	mu      sync.Mutex
	entries map[string]*entry // by instance id
	// directs are the instances whose newest checkpoint is a direct
	// create (its HeaderDirect): the session that wrote it, and when.
	directs map[string]directCreate
	newest  time.Time        // the newest checkpoint's time read
	seq     uint64           // the last stream sequence read
	moved   chan struct{}    // closed (and replaced) whenever seq grows
	st      jetstream.Stream // the bucket's stream, once looked up
}

// directCreate is a checkpoint created by a direct start.
type directCreate struct {
	session string
	written time.Time
}

// entry is what the index keeps of one instance.
type entry struct {
	id, process string
	status      instance.Status
	started     int64 // Unix nanoseconds
}

// NewInstances returns the empty index of the instances bucket store
// reads; log hears when its consumer ends and it rebuilds.
func NewInstances(js jetstream.JetStream, store *checkpoint.Store, log *slog.Logger) *Instances {
	return &Instances{js: js, store: store, stream: "KV_" + streams.InstancesBucket, log: log,
		entries: map[string]*entry{}, directs: map[string]directCreate{}, moved: make(chan struct{})}
}

// Run follows the bucket until ctx ends. A consumer that ends otherwise is
// created again on an empty index: keys removed meanwhile would otherwise
// stay.
func (ix *Instances) Run(ctx context.Context) {
	for {
		err := ix.follow(ctx)
		if ctx.Err() != nil {
			return
		}
		ix.log.Warn("instance index: the consumer of the instances bucket ended; rebuilding the index", "bucket", streams.InstancesBucket, "err", err)
		ix.mu.Lock()
		ix.entries, ix.directs, ix.seq, ix.st = map[string]*entry{}, map[string]directCreate{}, 0, nil
		ix.mu.Unlock()
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Second):
		}
	}
}

func (ix *Instances) follow(ctx context.Context) error {
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
func (ix *Instances) apply(m jetstream.Msg) {
	md, err := m.Metadata()
	if err != nil {
		return
	}
	id := m.Subject()[len("$KV."+streams.InstancesBucket+"."):]
	h := m.Headers()
	var e *entry
	if h.Get("KV-Operation") == "" && h.Get(jetstream.MarkerReasonHeader) == "" {
		e = &entry{id: id, process: h.Get(checkpoint.HeaderProcess), status: instance.Status(h.Get(checkpoint.HeaderStatus))}
		e.started, _ = strconv.ParseInt(h.Get(checkpoint.HeaderStarted), 10, 64)
		if e.process == "" {
			// A checkpoint written before checkpoints carried a summary:
			// read it once.
			e = ix.readSummary(id)
		}
	}
	session := h.Get(checkpoint.HeaderDirect)
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if e != nil {
		ix.entries[id] = e
	} else {
		delete(ix.entries, id)
	}
	if e != nil && session != "" {
		ix.directs[id] = directCreate{session: session, written: md.Timestamp}
	} else {
		delete(ix.directs, id)
	}
	if md.Timestamp.After(ix.newest) {
		ix.newest = md.Timestamp
	}
	if md.Sequence.Stream > ix.seq {
		ix.seq = md.Sequence.Stream
		close(ix.moved)
		ix.moved = make(chan struct{})
	}
}

func (ix *Instances) readSummary(id string) *entry {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, _, err := ix.store.Get(ctx, id)
	if err != nil {
		if !errors.Is(err, errdefs.ErrNotFound) {
			ix.log.Warn("instance index: skipping a checkpoint without a summary it cannot read", "instance", id, "err", err)
		}
		return nil
	}
	return &entry{id: id, process: s.ProcessID, status: checkpoint.Status(s), started: s.StartedAt.UnixNano()}
}

// lastSeq is the stream sequence of the newest message the bucket holds
// (0: none). Not the stream's last sequence: that may be a marker already
// expired, which the index will never read.
func (ix *Instances) lastSeq(ctx context.Context) (uint64, error) {
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

// Sync waits until the index has read the bucket up to the newest message
// it holds now, bounded by MaxCatchUp.
func (ix *Instances) Sync(ctx context.Context) error {
	last, err := ix.lastSeq(ctx)
	if err != nil {
		return err
	}
	timer := time.NewTimer(MaxCatchUp)
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
				streams.InstancesBucket, MaxCatchUp, seq, last)
		}
	}
}

// Pick returns the ids of the instances of process processID ("": any)
// whose status status accepts, newest first (then by id), at most limit
// (0: all). It keeps the best limit in a heap, so a page of a large index
// costs one pass and no full sort.
func (ix *Instances) Pick(processID string, status func(instance.Status) bool, limit int) []string {
	ix.mu.Lock()
	h := entryHeap{}
	for _, e := range ix.entries {
		switch {
		case processID != "" && e.process != processID || !status(e.status):
		case limit <= 0 || len(h) < limit:
			heap.Push(&h, e)
		case newer(e, h[0]):
			h[0] = e
			heap.Fix(&h, 0)
		}
	}
	ix.mu.Unlock()
	out := make([]string, len(h))
	for i := len(h) - 1; i >= 0; i-- {
		out[i] = heap.Pop(&h).(*entry).id
	}
	return out
}

// newer orders a list: newest first, then by id.
func newer(a, b *entry) bool {
	if a.started != b.started {
		return a.started > b.started
	}
	return a.id < b.id
}

// entryHeap holds the best entries seen so far with the worst on top.
type entryHeap []*entry

func (h entryHeap) Len() int           { return len(h) }
func (h entryHeap) Less(i, j int) bool { return newer(h[j], h[i]) }
func (h entryHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *entryHeap) Push(x any)        { *h = append(*h, x.(*entry)) }
func (h *entryHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}

// RecentDirectCreates lists the instances whose newest checkpoint is a
// direct create, written within window before the newest checkpoint the
// index has read, by a session skip does not refuse; newest is that
// checkpoint's time. Call Sync first to include every checkpoint written
// before the call.
func (ix *Instances) RecentDirectCreates(window time.Duration, skip func(session string) bool) (ids []string, newest time.Time) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	since := ix.newest.Add(-window)
	for id, d := range ix.directs {
		if !d.written.Before(since) && !skip(d.session) {
			ids = append(ids, id)
		}
	}
	return ids, ix.newest
}
