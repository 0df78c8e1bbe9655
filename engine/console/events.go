package console

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetbpm/jetbpm/internal/httpauth"
	"github.com/jetbpm/jetbpm/streams"
)

// A feedEvent is the data of one SSE "fact" event: the fact's subject
// (jetbpm.fact.<family>.<process|name>.<kind>) and the fact as stored.
type feedEvent struct {
	Subject string          `json:"subject"`
	Seq     uint64          `json:"seq"`
	Fact    json.RawMessage `json:"fact"`
}

// events streams the facts stored from now on as Server-Sent Events (a
// caller without the read access gets the task facts only): a
// "ready" event once the consumer exists (a fact stored after it is
// delivered), then one "fact" event per fact, in stream order, and a
// comment every heartbeat. Each request has its own ordered consumer,
// which goes with it.
func (h *Handler) events(w http.ResponseWriter, r *http.Request) {
	flusher, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	ctx := r.Context()
	// A task user sees the task facts only.
	subjects := streams.FactsSubjects
	if !httpauth.FromContext(ctx).Allows(httpauth.Read) {
		subjects = strings.TrimSuffix(streams.FactsSubjects, ">") + streams.FactTask + ".>"
	}
	cons, err := h.js.OrderedConsumer(ctx, streams.FactsStream, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{subjects},
		DeliverPolicy:  jetstream.DeliverNewPolicy,
	})
	if err != nil {
		h.logger.Warn("console: event feed", "err", err)
		http.Error(w, "the facts stream is unavailable: "+err.Error(), http.StatusServiceUnavailable)
		return
	}
	msgs, err := cons.Messages()
	if err != nil {
		http.Error(w, "the facts stream is unavailable: "+err.Error(), http.StatusServiceUnavailable)
		return
	}
	defer msgs.Stop()
	facts := make(chan feedEvent, 64)
	go pump(ctx, msgs, facts)

	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	// ready says the node's history level: below full, pages that follow
	// instances cannot wait for their facts and read them again instead.
	lvl := h.eng.History()
	ready, _ := json.Marshal(map[string]any{"history": lvl.String(), "notRecorded": notRecorded(lvl)})
	fmt.Fprintf(w, "retry: 2000\nevent: ready\ndata: %s\n\n", ready)
	flusher.Flush()

	beat := time.NewTicker(h.heartbeat)
	defer beat.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-beat.C:
			fmt.Fprint(w, ": heartbeat\n\n")
		case ev, ok := <-facts:
			if !ok {
				return // the consumer ended; the browser reconnects
			}
			data, _ := json.Marshal(ev)
			fmt.Fprintf(w, "id: %d\nevent: fact\ndata: %s\n\n", ev.Seq, data)
		}
		flusher.Flush()
	}
}

// pump moves messages from the consumer to out until ctx ends or the
// consumer fails; it closes out.
func pump(ctx context.Context, msgs jetstream.MessagesContext, out chan<- feedEvent) {
	defer close(out)
	go func() {
		<-ctx.Done()
		msgs.Stop()
	}()
	for {
		msg, err := msgs.Next()
		if err != nil {
			return
		}
		ev := feedEvent{Subject: msg.Subject(), Fact: json.RawMessage(msg.Data())}
		if md, err := msg.Metadata(); err == nil {
			ev.Seq = md.Sequence.Stream
		}
		if !json.Valid(ev.Fact) {
			ev.Fact = json.RawMessage("null")
		}
		select {
		case out <- ev:
		case <-ctx.Done():
			return
		}
	}
}
