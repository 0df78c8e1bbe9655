package engine

import (
	"context"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetbpm/jetbpm/engine/index"
	"github.com/jetbpm/jetbpm/engine/messages"
	"github.com/jetbpm/jetbpm/engine/operations"
	"github.com/jetbpm/jetbpm/engine/partition"
	"github.com/jetbpm/jetbpm/engine/signals"
	"github.com/jetbpm/jetbpm/internal/metrics"
)

// engineMetrics are the engine's Prometheus metrics. A nil
// registry still gets working counters that nobody scrapes.
type engineMetrics struct {
	partition partition.Metrics  // instances, jobs, reports, task facts
	ops       operations.Metrics // docs/engine.md §3.1
	messages  messages.Metrics   // docs/messages.md §6
	signals   signals.Metrics    // docs/signals.md §6
	// routed counts the starts this node routed to the holder of their
	// partition and the holder took (route.go).
	routed *metrics.Counter
}

// newEngineMetrics registers the engine's metrics; buffer, a consumer of
// the pending expiry schedules (streams.MessageBufferConsumer), counts the
// buffered messages, the task index the open tasks, and damage the lost
// instances.
func newEngineMetrics(r *metrics.Registry, jobsStream jetstream.Stream, buffer jetstream.Consumer, tasks *index.Tasks, damage *storeWatch, now func() time.Time) *engineMetrics {
	if r == nil {
		r = metrics.NewRegistry()
	}
	m := &engineMetrics{
		partition: partition.NewMetrics(r),
		ops:       operations.NewMetrics(r),
		messages:  messages.NewMetrics(r),
		signals:   signals.NewMetrics(r),
		routed:    r.NewCounter("jetbpm_starts_routed_total", "Starts this node routed to the engine node holding their partition, which took them."),
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
	r.NewGaugeFunc("jetbpm_store_lost_instances", "Instances lost or damaged in the store with an open record (docs/reliability.md, \"A damaged store\"); every node reports the same.", func() float64 {
		return float64(damage.openInstances())
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
