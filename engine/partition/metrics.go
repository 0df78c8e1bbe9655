package partition

import (
	"github.com/jetbpm/jetbpm/engine/instance"
	"github.com/jetbpm/jetbpm/internal/metrics"
	"github.com/jetbpm/jetbpm/jobs"
)

// Metrics are what a node's partitions count: instance lifecycle facts,
// jobs and workers' reports (docs/jobs.md), user task facts.
type Metrics struct {
	instances  *metrics.CounterVec // by lifecycle fact kind
	enqueued   *metrics.CounterVec // by topic
	reports    *metrics.CounterVec // by topic, kind, verdict
	retries    *metrics.CounterVec // by topic
	exhausted  *metrics.CounterVec // by topic
	extensions *metrics.CounterVec // by topic
	capHits    *metrics.CounterVec // by topic
	expiries   *metrics.CounterVec // by topic
	terminals  *metrics.CounterVec // by topic, outcome
	taskFacts  *metrics.CounterVec // by kind (docs/usertasks.md §5)
}

// NewMetrics registers the partitions' metrics with r.
func NewMetrics(r *metrics.Registry) Metrics {
	return Metrics{
		instances:  r.NewCounterVec("jetbpm_instance_facts_total", "Instance lifecycle transitions committed by this node.", "kind"),
		enqueued:   r.NewCounterVec("jetbpm_jobs_enqueued_total", "External jobs queued.", "topic"),
		reports:    r.NewCounterVec("jetbpm_job_reports_total", "Worker messages decided, by kind and verdict.", "topic", "kind", "verdict"),
		retries:    r.NewCounterVec("jetbpm_job_retries_total", "Technical faults sent back for another attempt.", "topic"),
		exhausted:  r.NewCounterVec("jetbpm_job_retries_exhausted_total", "Jobs that ran out of attempts.", "topic"),
		extensions: r.NewCounterVec("jetbpm_job_lock_extensions_total", "Lock extensions granted.", "topic"),
		capHits:    r.NewCounterVec("jetbpm_job_lock_cap_hits_total", "Lock extensions refused at maxLockDuration.", "topic"),
		expiries:   r.NewCounterVec("jetbpm_job_lock_expiries_total", "Deliveries whose lock expired without a verdict.", "topic"),
		terminals:  r.NewCounterVec("jetbpm_job_outcomes_total", "Terminal job outcomes applied to instances.", "topic", "outcome"),
		taskFacts: r.NewCounterVec("jetbpm_task_facts_total",
			"User task changes committed by this node, by fact kind (created, assigned, completed, canceled).", "kind"),
	}
}

// countDecision records a decided worker message.
func (m Metrics) countDecision(topic string, r *jobs.Report, before uint64, dec jobs.Decision, st *jobs.State) {
	verdict := "refused"
	if dec.Verdict.Accepted {
		verdict = "accepted"
	}
	m.reports.With(topic, string(r.Kind), verdict).Inc()
	if st.Delivery > before && before > 0 && st.Nacked != before {
		m.expiries.With(topic).Inc()
	}
	switch {
	case dec.Action == jobs.Nak && r.Kind == jobs.Release:
		// a release is no retry
	case dec.Action == jobs.Nak:
		m.retries.With(topic).Inc()
	case dec.Action == jobs.Progress:
		m.extensions.With(topic).Inc()
	case r.Kind == jobs.Extend && !dec.Verdict.Accepted:
		m.capHits.With(topic).Inc()
	}
	if t := dec.Terminal; t != nil {
		m.terminals.With(topic, string(t.Kind)).Inc()
		if t.Cause == jobs.CauseExhausted {
			m.exhausted.With(topic).Inc()
		}
	}
}

// countEffects records what a committed outbox held.
func (m Metrics) countEffects(outbox []instance.Effect) {
	for _, eff := range outbox {
		switch eff.Kind {
		case instance.EnqueueJob:
			m.enqueued.With(eff.Job.Topic).Inc()
		case instance.PublishFact:
			m.instances.With(string(eff.Fact.Kind)).Inc()
		case instance.PublishTaskFact:
			m.taskFacts.With(string(eff.TaskFact.Kind)).Inc()
		}
	}
}
