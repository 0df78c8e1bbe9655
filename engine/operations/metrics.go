package operations

import "github.com/jetbpm/jetbpm/internal/metrics"

// Metrics are a node's in-process operation metrics (docs/engine.md §3.1).
type Metrics struct {
	// Results counts results by kind (completed, bpmnError, failed,
	// timedOut) and "discarded".
	Results *metrics.CounterVec
	// Running counts the operations holding a slot of the pool; Overdue
	// those still running after their deadline or cancellation.
	Running, Overdue *metrics.Gauge
}

// NewMetrics registers the operation metrics with r.
func NewMetrics(r *metrics.Registry) Metrics {
	return Metrics{
		Results: r.NewCounterVec("jetbpm_operation_results_total",
			"In-process operation results this node reported, by kind (completed, bpmnError, failed, timedOut), or discarded (late, or for a task that moved on).", "result"),
		Running: r.NewGauge("jetbpm_operations_running", "In-process operations holding a slot of this node's pool."),
		Overdue: r.NewGauge("jetbpm_operations_overdue",
			"In-process operations still running after their deadline or cancellation; their goroutines cannot be stopped and their results are discarded."),
	}
}
