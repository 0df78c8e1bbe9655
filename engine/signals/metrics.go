package signals

import "github.com/jetbpm/jetbpm/internal/metrics"

// Metrics are a node's signal metrics (docs/signals.md §6).
type Metrics struct {
	// Broadcasts counts the broadcasts this node fanned out; Deliveries
	// the events and starts they sent, by kind (instance, start).
	Broadcasts *metrics.Counter
	Deliveries *metrics.CounterVec
}

// NewMetrics registers the signal metrics with r.
func NewMetrics(r *metrics.Registry) Metrics {
	return Metrics{
		Broadcasts: r.NewCounter("jetbpm_signals_total", "Signal broadcasts this node fanned out."),
		Deliveries: r.NewCounterVec("jetbpm_signal_deliveries_total",
			"Signal events sent to waiting instances (instance) and instances started by signal start events (start).", "kind"),
	}
}

// count records a broadcast fanned out to instances and starts.
func (m Metrics) count(instances, starts int) {
	m.Broadcasts.Inc()
	m.Deliveries.With("instance").Add(float64(instances))
	m.Deliveries.With("start").Add(float64(starts))
}
