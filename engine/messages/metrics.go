package messages

import (
	"github.com/jetbpm/jetbpm/engine/correlation"
	"github.com/jetbpm/jetbpm/internal/metrics"
)

// Metrics are a node's message partition metrics (docs/messages.md §6).
type Metrics struct {
	// Messages counts the published messages applied, by result.
	Messages *metrics.CounterVec
	// Correlations counts messages offered to a subscription or starting
	// an instance, by kind (subscription, start).
	Correlations *metrics.CounterVec
	Rejections   *metrics.Counter
	Expiries     *metrics.Counter
}

// NewMetrics registers the message partition metrics with r.
func NewMetrics(r *metrics.Registry) Metrics {
	return Metrics{
		Messages: r.NewCounterVec("jetbpm_messages_total",
			"Published messages this node's message partitions applied, by result: correlated (to a subscription or a start), buffered, dropped (no subscription, no time to live), refused.", "result"),
		Correlations: r.NewCounterVec("jetbpm_message_correlations_total",
			"Messages offered to a subscription or starting an instance, by kind (subscription, start).", "kind"),
		Rejections: r.NewCounter("jetbpm_message_rejections_total", "Correlations an instance rejected because it had left the element."),
		Expiries:   r.NewCounter("jetbpm_message_expiries_total", "Buffered messages whose time to live ended."),
	}
}

// stats counts the published messages a message partition applied to one
// entry, by result.
type stats struct {
	correlated, buffered, dropped, refused int
}

func (st *stats) add(o stats) {
	st.correlated += o.correlated
	st.buffered += o.buffered
	st.dropped += o.dropped
	st.refused += o.refused
}

// count records a committed entry: the messages applied and the
// correlations, rejections and expiries in its outbox.
func (m Metrics) count(st stats, outbox []correlation.Effect) {
	for result, n := range map[string]int{"correlated": st.correlated, "buffered": st.buffered, "dropped": st.dropped, "refused": st.refused} {
		if n > 0 {
			m.Messages.With(result).Add(float64(n))
		}
	}
	for _, eff := range outbox {
		switch eff.Kind {
		case correlation.Correlate:
			m.Correlations.With("subscription").Inc()
		case correlation.Start:
			m.Correlations.With("start").Inc()
		case correlation.Rejected:
			m.Rejections.Inc()
		case correlation.Expired:
			m.Expiries.Inc()
		}
	}
}
