package console

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetbpm/jetbpm/internal/wirejson"
	"github.com/jetbpm/jetbpm/streams"
)

// maxIndexedFacts bounds the fact index: it reads at most the newest
// maxIndexedFacts facts at start-up and holds at most that many stream
// sequences. An entry costs 8 bytes a sequence (plus slice slack) and
// about 100 bytes an instance (its id, the map entry, the eviction queue):
// full, the index holds 13 MiB at three facts an instance, 25 MiB at one
// (BenchmarkFactIndexFull).
const maxIndexedFacts = 200_000

// A factIndex lists, per instance, the stream sequences of its instance,
// incident and task facts, so that a timeline reads the instance's own
// facts instead of replaying its process's. Facts are stored per process
// (jetbpm.fact.<family>.<process>.<kind>), not per instance, and that
// layout is a contract; the index is the console's own view of it, kept
// in memory by one ordered consumer of the whole facts stream.
//
// An instance has an entry from its "started" fact on: the facts of an
// id without one (its start is older than what the index read, or its
// entry was dropped for the bound) are not recorded, so an entry always
// holds every fact since the instance started, or there is none and the
// timeline replays the process as before. A second "started" fact for an
// id (the id reused after the first instance was deleted) starts the
// entry again, as the replay starts at the instance's start.
//
// The index is goroutine-safe. read is the last stream sequence it has
// processed; waitRead lets a request wait until the index has seen every
// fact stored before the request.
type factIndex struct {
	max int // sequences held at most

	mu      sync.Mutex
	read    uint64              // the last stream sequence processed
	seqs    map[string][]uint64 // instance id → its facts' sequences, oldest first
	held    int                 // the sequences in seqs
	order   []indexed           // entries by first sequence, oldest first (stale ones skipped)
	waiters []readWaiter
}

// indexed names an entry by its id and first sequence: the eviction queue
// holds one per entry begun, and one whose entry has since started again
// (a different first sequence) or been dropped is stale.
type indexed struct {
	id    string
	first uint64
}

type readWaiter struct {
	seq  uint64
	done chan struct{}
}

func newFactIndex(limit int) *factIndex {
	return &factIndex{max: limit, seqs: map[string][]uint64{}}
}

var instanceIDField = wirejson.NewFields("instanceId")

// instanceOf returns the top-level "instanceId" of a fact, "" for none:
// it scans the JSON without decoding the other fields' values.
func instanceOf(data []byte) string {
	s := wirejson.NewScanner(data)
	if s.Null() || !s.Object() {
		return ""
	}
	for s.More() {
		if s.Field(instanceIDField) == "instanceId" {
			var id string
			s.String(&id)
			if s.Err() != nil {
				return ""
			}
			return id
		}
		s.Skip()
	}
	return ""
}

var startedSuffix = "." + streams.Token("started")

// indexedFamily says whether a fact subject is of a family the timeline
// shows (instance, incident, task), and whether it is an instance's start.
func indexedFamily(subject string) (ok, started bool) {
	rest, found := strings.CutPrefix(subject, strings.TrimSuffix(streams.FactsSubjects, ">"))
	if !found {
		return false, false
	}
	family, _, _ := strings.Cut(rest, ".")
	switch family {
	case streams.FactInstance:
		return true, strings.HasSuffix(subject, startedSuffix)
	case streams.FactIncident, streams.FactTask:
		return true, false
	}
	return false, false
}

// add records the fact at seq (every fact of the stream passes here, in
// order, so read advances even over the facts not recorded).
func (x *factIndex) add(seq uint64, subject string, data []byte) {
	id := ""
	ok, started := indexedFamily(subject)
	if ok {
		id = instanceOf(data)
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if id != "" {
		if started {
			x.held -= len(x.seqs[id])
			x.seqs[id] = []uint64{seq}
			x.held++
			x.order = append(x.order, indexed{id, seq})
		} else if s, ok := x.seqs[id]; ok {
			x.seqs[id] = append(s, seq)
			x.held++
		}
		x.evict()
	}
	if seq > x.read {
		x.read = seq
		x.notify()
	}
}

// evict drops the entries with the oldest first sequence until at most
// max sequences are held, and compacts the queue when stale names fill
// more than half of it.
func (x *factIndex) evict() {
	for x.held > x.max && len(x.order) > 0 {
		o := x.order[0]
		x.order = x.order[1:]
		if s, ok := x.seqs[o.id]; ok && s[0] == o.first {
			x.held -= len(s)
			delete(x.seqs, o.id)
		}
	}
	if len(x.order) > 64 && len(x.order) > 2*len(x.seqs) {
		live := make([]indexed, 0, len(x.seqs))
		for _, o := range x.order {
			if s, ok := x.seqs[o.id]; ok && s[0] == o.first {
				live = append(live, o)
			}
		}
		x.order = live
	}
}

// notify wakes the waiters whose sequence has been read.
func (x *factIndex) notify() {
	kept := x.waiters[:0]
	for _, w := range x.waiters {
		if w.seq <= x.read {
			close(w.done)
		} else {
			kept = append(kept, w)
		}
	}
	clear(x.waiters[len(kept):])
	x.waiters = kept
}

// waitRead waits until the index has processed seq, at most until ctx
// ends; it says whether it has.
func (x *factIndex) waitRead(ctx context.Context, seq uint64) bool {
	x.mu.Lock()
	if x.read >= seq {
		x.mu.Unlock()
		return true
	}
	w := readWaiter{seq: seq, done: make(chan struct{})}
	x.waiters = append(x.waiters, w)
	x.mu.Unlock()
	select {
	case <-w.done:
		return true
	case <-ctx.Done():
		x.mu.Lock()
		defer x.mu.Unlock()
		for i, o := range x.waiters {
			if o.done == w.done {
				x.waiters = append(x.waiters[:i], x.waiters[i+1:]...)
				break
			}
		}
		return x.read >= seq
	}
}

// lookup returns a copy of id's sequences, and false when the index has
// no entry for it.
func (x *factIndex) lookup(id string) ([]uint64, bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	s, ok := x.seqs[id]
	return append([]uint64(nil), s...), ok
}

// size returns the sequences and entries held.
func (x *factIndex) size() (held, entries int) {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.held, len(x.seqs)
}

// run fills the index until ctx ends: from the newest max facts of the
// stream at start-up, then every fact stored. It starts a new consumer
// after the last sequence read when one fails.
func (x *factIndex) run(ctx context.Context, js jetstream.JetStream, logger *slog.Logger) {
	for ctx.Err() == nil {
		err := x.follow(ctx, js)
		if ctx.Err() == nil {
			logger.Warn("console: indexing the facts", "err", err)
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
		}
	}
}

func (x *factIndex) follow(ctx context.Context, js jetstream.JetStream) error {
	x.mu.Lock()
	next := x.read + 1
	x.mu.Unlock()
	if next == 1 { // start-up: the newest max facts
		stream, err := js.Stream(ctx, streams.FactsStream)
		if err != nil {
			return err
		}
		st := stream.CachedInfo().State
		next = max(st.FirstSeq, 1)
		if st.LastSeq >= uint64(x.max) {
			next = max(next, st.LastSeq-uint64(x.max)+1)
		}
	}
	cons, err := js.OrderedConsumer(ctx, streams.FactsStream, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{streams.FactsSubjects},
		DeliverPolicy:  jetstream.DeliverByStartSequencePolicy,
		OptStartSeq:    next,
	})
	if err != nil {
		return err
	}
	msgs, err := cons.Messages()
	if err != nil {
		return err
	}
	defer msgs.Stop()
	stop := context.AfterFunc(ctx, msgs.Stop)
	defer stop()
	for {
		msg, err := msgs.Next()
		if err != nil {
			return err
		}
		md, err := msg.Metadata()
		if err != nil {
			continue
		}
		x.add(md.Sequence.Stream, msg.Subject(), msg.Data())
	}
}
