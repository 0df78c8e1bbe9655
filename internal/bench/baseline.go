package bench

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// baseline measures the raw job lifecycle on plain JetStream — enqueue →
// worker fetch → report published → job acked → report consumed — on the
// same server, storage and connection type as the scenario, with the same
// number of workers, batching where JetStream allows it. It is the ceiling
// the engine's numbers are compared against.
func (e *env) baseline(ctx context.Context) (*Baseline, error) {
	js, err := jetstreamOf(e.engNC)
	if err != nil {
		return nil, err
	}
	for _, name := range []string{"BENCH_RAW_JOBS", "BENCH_RAW_REPORTS"} {
		subject := map[string]string{"BENCH_RAW_JOBS": "bench.raw.job.>", "BENCH_RAW_REPORTS": "bench.raw.report.>"}[name]
		if _, err := js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{Name: name, Subjects: []string{subject}, Retention: jetstream.WorkQueuePolicy, Replicas: max(e.cfg.Replicas, 1)}); err != nil {
			return nil, err
		}
		defer func() { _ = js.DeleteStream(context.Background(), name) }()
	}
	jobsC, err := js.CreateOrUpdateConsumer(ctx, "BENCH_RAW_JOBS", jetstream.ConsumerConfig{Durable: "workers", AckPolicy: jetstream.AckExplicitPolicy, MaxAckPending: 100_000})
	if err != nil {
		return nil, err
	}
	repC, err := js.CreateOrUpdateConsumer(ctx, "BENCH_RAW_REPORTS", jetstream.ConsumerConfig{Durable: "engine", AckPolicy: jetstream.AckExplicitPolicy, MaxAckPending: 100_000})
	if err != nil {
		return nil, err
	}
	d := min(e.cfg.Duration, 5*time.Second)
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	var consumed, published atomic.Int64
	go func() { // the "engine": consume reports, ack each job on the worker's behalf
		for runCtx.Err() == nil {
			batch, err := repC.Fetch(256, jetstream.FetchMaxWait(50*time.Millisecond))
			if err != nil {
				continue
			}
			for m := range batch.Messages() {
				_ = e.engNC.Publish(string(m.Data()), []byte("+ACK"))
				_ = m.Ack()
				consumed.Add(1)
			}
		}
	}()
	for range e.cfg.Workers {
		nc, err := e.connect(e.cfg.WorkersTCP)
		if err != nil {
			return nil, err
		}
		wjs, err := jetstreamOf(nc)
		if err != nil {
			return nil, err
		}
		go func() {
			for runCtx.Err() == nil {
				batch, err := jobsC.Fetch(64, jetstream.FetchMaxWait(50*time.Millisecond))
				if err != nil {
					continue
				}
				for m := range batch.Messages() {
					_, _ = wjs.PublishAsync("bench.raw.report.x", []byte(m.Reply()))
				}
				<-wjs.PublishAsyncComplete()
			}
		}()
	}
	payload := make([]byte, 200)
	t0 := time.Now()
	start := consumed.Load()
	for time.Since(t0) < d && ctx.Err() == nil {
		// Keep about a thousand jobs outstanding: enough to saturate,
		// bounded so the queue does not grow without limit.
		if published.Load()-consumed.Load() > 1000 {
			<-js.PublishAsyncComplete()
			time.Sleep(time.Millisecond)
			continue
		}
		if _, err := js.PublishAsync(fmt.Sprintf("bench.raw.job.%d", published.Add(1)), payload); err != nil {
			return nil, err
		}
	}
	elapsed := time.Since(t0)
	return &Baseline{JobsPerSec: float64(consumed.Load()-start) / elapsed.Seconds(), Seconds: elapsed.Seconds()}, nil
}
