package console

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetbpm/jetbpm/engine"
	"github.com/jetbpm/jetbpm/streams"
)

// maxTimeline bounds the facts a timeline answers (the oldest are kept);
// maxTimelineScan the facts of the process it reads to find them;
// timelineBatch how many it asks the consumer for at a time: each fetch
// waits for its whole batch before the next is asked, and with 20,000
// facts batches of 5,000 read them in about half the time of batches of
// 1,000 (a fetch holds at most 5,000 facts, a few MB).
const (
	maxTimeline     = 500
	maxTimelineScan = 100_000
	timelineBatch   = 5000
)

// indexWait bounds how long a timeline waits for the fact index to read
// the facts stored before the request; getConcurrency how many facts it
// reads from the stream at a time.
const (
	indexWait      = 2 * time.Second
	getConcurrency = 16
)

// timeline answers the stored facts of one instance, oldest first: its
// lifecycle, its incidents' transitions and its user tasks. The fact
// index (factindex.go) lists their sequences, and the timeline reads
// those facts only ("from": "index"). When the index does not cover the
// instance (its start is older than what the index holds, or the index
// has not read the facts stored before the request within indexWait),
// the timeline replays the process's facts from the instance's start (at
// most maxTimelineScan) and keeps the instance's own ("from": "scan").
// "truncated" says when the answer stops early: more than maxTimeline
// facts, or a replay that stopped at maxTimelineScan.
func (h *Handler) timeline(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	view, err := h.eng.Instance(ctx, id)
	if errors.Is(err, engine.ErrNotFound) {
		writeProblem(w, http.StatusNotFound, "instance "+id+": not found")
		return
	}
	if err != nil {
		writeProblem(w, http.StatusInternalServerError, err.Error())
		return
	}
	from := "index"
	facts, truncated, ok, err := h.indexedFacts(ctx, view)
	if err == nil && !ok {
		from = "scan"
		facts, truncated, err = h.instanceFacts(ctx, view)
	}
	if err != nil {
		writeProblem(w, http.StatusInternalServerError, "reading the facts: "+err.Error())
		return
	}
	// A level below full writes some facts not at all: the answer says
	// which, so that a short timeline is not read as all that happened.
	lvl := h.eng.History()
	writeJSON(w, map[string]any{"facts": facts, "truncated": truncated, "from": from,
		"history": lvl.String(), "notRecorded": notRecorded(lvl)})
}

// indexedFacts reads the instance's facts the index lists; ok is false
// when the index does not cover the instance.
func (h *Handler) indexedFacts(ctx context.Context, view *engine.InstanceView) (out []feedEvent, truncated, ok bool, err error) {
	stream, err := h.js.Stream(ctx, streams.FactsStream)
	if err != nil {
		return nil, false, false, err
	}
	wait, cancel := context.WithTimeout(ctx, indexWait)
	caughtUp := h.facts.waitRead(wait, stream.CachedInfo().State.LastSeq)
	cancel()
	if !caughtUp {
		h.logger.Warn("console: the fact index is behind; the timeline replays the process", "instance", view.ID)
		return nil, false, false, nil
	}
	seqs, ok := h.facts.lookup(view.ID)
	if !ok {
		return nil, false, false, nil
	}
	if len(seqs) > maxTimeline {
		seqs, truncated = seqs[:maxTimeline], true
	}
	got := make([]*jetstream.RawStreamMsg, len(seqs))
	errs := make([]error, len(seqs))
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(getConcurrency, len(seqs)) {
		wg.Go(func() {
			for i := range next {
				got[i], errs[i] = stream.GetMsg(ctx, seqs[i])
			}
		})
	}
	for i := range seqs {
		next <- i
	}
	close(next)
	wg.Wait()
	out = make([]feedEvent, 0, len(seqs))
	for i, m := range got {
		if errors.Is(errs[i], jetstream.ErrMsgNotFound) {
			continue // aged out of the stream since it was indexed
		}
		if errs[i] != nil {
			return nil, false, false, errs[i]
		}
		out = append(out, feedEvent{Subject: m.Subject, Seq: m.Sequence, Fact: json.RawMessage(m.Data)})
	}
	return out, truncated, true, nil
}

func (h *Handler) instanceFacts(ctx context.Context, view *engine.InstanceView) ([]feedEvent, bool, error) {
	since := view.StartedAt.Add(-time.Second) // facts carry the engine's clock; the stream its own
	cons, err := h.js.OrderedConsumer(ctx, streams.FactsStream, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{
			streams.FactFilter(streams.FactInstance, view.ProcessID),
			streams.FactFilter(streams.FactIncident, view.ProcessID),
			streams.FactFilter(streams.FactTask, view.ProcessID),
		},
		DeliverPolicy: jetstream.DeliverByStartTimePolicy,
		OptStartTime:  &since,
	})
	if err != nil {
		return nil, false, err
	}
	info, err := cons.Info(ctx)
	if err != nil {
		return nil, false, err
	}
	// Every fact names its instance as "instanceId":"<id>" (JSON from
	// Go's encoder): a byte search skips the other instances' facts
	// without decoding them.
	key, _ := json.Marshal(view.ID)
	needle := append([]byte(`"instanceId":`), key...)
	out := []feedEvent{}
	left := min(info.NumPending, maxTimelineScan)
	for left > 0 {
		batch, err := cons.Fetch(int(min(left, timelineBatch)), jetstream.FetchMaxWait(5*time.Second))
		if err != nil {
			return nil, false, err
		}
		n := 0
		for msg := range batch.Messages() {
			n++
			if !bytes.Contains(msg.Data(), needle) {
				continue
			}
			if len(out) == maxTimeline {
				return out, true, nil
			}
			ev := feedEvent{Subject: msg.Subject(), Fact: json.RawMessage(msg.Data())}
			if md, err := msg.Metadata(); err == nil {
				ev.Seq = md.Sequence.Stream
			}
			out = append(out, ev)
		}
		if err := batch.Error(); err != nil {
			return nil, false, err
		}
		if n == 0 {
			break
		}
		left -= uint64(n)
	}
	return out, info.NumPending > maxTimelineScan, nil
}
