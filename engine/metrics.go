package engine

import (
	"context"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetbpm/jetbpm/engine/index"
	"github.com/jetbpm/jetbpm/engine/instance"
	"github.com/jetbpm/jetbpm/engine/messages"
	"github.com/jetbpm/jetbpm/engine/operations"
	"github.com/jetbpm/jetbpm/engine/signals"
	"github.com/jetbpm/jetbpm/internal/metrics"
	"github.com/jetbpm/jetbpm/jobs"
)

// engineMetrics are the engine's Prometheus metrics. A nil
// registry still gets working counters that nobody scrapes.
type engineMetrics struct {
	instances  *metrics.CounterVec // by lifecycle fact kind
	enqueued   *metrics.CounterVec // by topic
	reports    *metrics.CounterVec // by topic, kind, verdict
	retries    *metrics.CounterVec // by topic
	exhausted  *metrics.CounterVec // by topic
	extensions *metrics.CounterVec // by topic
	capHits    *metrics.CounterVec // by topic
	expiries   *metrics.CounterVec // by topic
	terminals  *metrics.CounterVec // by topic, outcome

	// In-process operations (docs/engine.md §3.1).
	ops operations.Metrics

	// Message partitions (docs/messages.md §6).
	messages messages.Metrics

	// User tasks (docs/usertasks.md §5).
	taskFacts *metrics.CounterVec // by kind

	// Signals (docs/signals.md §6).
	signals signals.Metrics
}

// newEngineMetrics registers the engine's metrics; buffer, a consumer of
// the pending expiry schedules (streams.MessageBufferConsumer), counts the
// buffered messages, and the task index the open tasks.
func newEngineMetrics(r *metrics.Registry, jobsStream jetstream.Stream, buffer jetstream.Consumer, tasks *index.Tasks, now func() time.Time) *engineMetrics {
	if r == nil {
		r = metrics.NewRegistry()
	}
	m := &engineMetrics{
		instances:  r.NewCounterVec("jetbpm_instance_facts_total", "Instance lifecycle transitions committed by this node.", "kind"),
		enqueued:   r.NewCounterVec("jetbpm_jobs_enqueued_total", "External jobs queued.", "topic"),
		reports:    r.NewCounterVec("jetbpm_job_reports_total", "Worker messages decided, by kind and verdict.", "topic", "kind", "verdict"),
		retries:    r.NewCounterVec("jetbpm_job_retries_total", "Technical faults sent back for another attempt.", "topic"),
		exhausted:  r.NewCounterVec("jetbpm_job_retries_exhausted_total", "Jobs that ran out of attempts.", "topic"),
		extensions: r.NewCounterVec("jetbpm_job_lock_extensions_total", "Lock extensions granted.", "topic"),
		capHits:    r.NewCounterVec("jetbpm_job_lock_cap_hits_total", "Lock extensions refused at maxLockDuration.", "topic"),
		expiries:   r.NewCounterVec("jetbpm_job_lock_expiries_total", "Deliveries whose lock expired without a verdict.", "topic"),
		terminals:  r.NewCounterVec("jetbpm_job_outcomes_total", "Terminal job outcomes applied to instances.", "topic", "outcome"),
		ops:        operations.NewMetrics(r),
		messages:   messages.NewMetrics(r),
		taskFacts: r.NewCounterVec("jetbpm_task_facts_total",
			"User task changes committed by this node, by fact kind (created, assigned, completed, canceled).", "kind"),
		signals: signals.NewMetrics(r),
	}
	// Both read this node's task index, which holds every task of the
	// cluster: every node reports the same values (aggregate with max).
	r.NewGaugeFunc("jetbpm_tasks_open", "Open user tasks (created or assigned), all processes.", func() float64 {
		return float64(tasks.OpenCount())
	})
	r.NewGaugeVecFunc("jetbpm_task_oldest_open_age_seconds", "Age of the oldest open user task, per process.", []string{"process"},
		func(emit func(float64, ...string)) {
			t := now()
			for process, created := range tasks.OldestOpen() {
				emit(t.Sub(created).Seconds(), process)
			}
		})
	r.NewGaugeFunc("jetbpm_messages_buffered", "Messages buffered for subscriptions that open later (all message partitions).", func() float64 {
		if buffer == nil {
			return 0
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		info, err := buffer.Info(ctx)
		if err != nil {
			return 0
		}
		return float64(info.NumPending)
	})
	gauge := func(name, help string, read func(*jetstream.ConsumerInfo) float64) {
		r.NewGaugeVecFunc(name, help, []string{"topic"}, func(emit func(float64, ...string)) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			list := jobsStream.ListConsumers(ctx)
			for info := range list.Info() {
				emit(read(info), info.Config.FilterSubject)
			}
		})
	}
	gauge("jetbpm_jobs_queued", "Jobs waiting to be fetched, per topic consumer (subject filter).",
		func(i *jetstream.ConsumerInfo) float64 { return float64(i.NumPending) })
	gauge("jetbpm_jobs_locked", "Jobs fetched and not yet decided, per topic consumer (subject filter).",
		func(i *jetstream.ConsumerInfo) float64 { return float64(i.NumAckPending) })
	return m
}

// countDecision records a decided worker message.
func (m *engineMetrics) countDecision(topic string, r *jobs.Report, before uint64, dec jobs.Decision, st *jobs.State) {
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
func (m *engineMetrics) countEffects(outbox []instance.Effect) {
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
