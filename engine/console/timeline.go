package console

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetbpm/jetbpm/engine"
	"github.com/jetbpm/jetbpm/streams"
)

// maxTimeline bounds the facts a timeline answers (the oldest are kept).
const maxTimeline = 500

// timeline answers the stored facts of one instance, oldest first: its
// lifecycle, its incidents' transitions and its user tasks. Facts are
// stored per process, so it replays the process's facts from the
// instance's start and keeps the instance's own.
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
	facts, truncated, err := h.instanceFacts(ctx, view)
	if err != nil {
		writeProblem(w, http.StatusInternalServerError, "reading the facts: "+err.Error())
		return
	}
	writeJSON(w, map[string]any{"facts": facts, "truncated": truncated})
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
	out := []feedEvent{}
	for left := info.NumPending; left > 0; left-- {
		msg, err := cons.Next(jetstream.FetchMaxWait(5 * time.Second))
		if err != nil {
			return nil, false, err
		}
		var about struct {
			Instance string `json:"instanceId"`
		}
		if json.Unmarshal(msg.Data(), &about) != nil || about.Instance != view.ID {
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
	return out, false, nil
}
