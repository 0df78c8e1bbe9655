package engine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetbpm/jetbpm/engine"
	"github.com/jetbpm/jetbpm/engine/instance"
	"github.com/jetbpm/jetbpm/engine/model"
	"github.com/jetbpm/jetbpm/jobs"
	"github.com/jetbpm/jetbpm/streams/streamstest"
)

// benchPartitions is the partition count of the one-task benchmark, as
// jetbpm serve provisions by default.
const benchPartitions = 8

// benchWorkers completes every job of topic as fast as it can: batched
// fetches, async report publishes, no verdicts awaited.
func benchWorkers(b *testing.B, env *streamstest.Env, topic string, n int) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for range n {
		nc := env.NewConn(b)
		js, _ := jetstream.New(nc)
		cons, err := js.Consumer(ctx, "JETBPM_JOBS", "topic-"+topic)
		if err != nil {
			b.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				batch, err := cons.Fetch(64, jetstream.FetchMaxWait(100*time.Millisecond))
				if err != nil {
					continue
				}
				for m := range batch.Messages() {
					var job jobs.Job
					_ = json.Unmarshal(m.Data(), &job)
					body, _ := json.Marshal(jobs.Report{Kind: jobs.Complete, JobID: job.ID, Delivery: m.Reply(), Output: map[string]any{"ok": true}})
					_, _ = js.PublishAsync(job.ReportTo, body)
				}
				<-js.PublishAsyncComplete()
			}
		}()
	}
	return func() { cancel(); wg.Wait() }
}

// BenchmarkOneTask: start → external task → end, closed loop with 64
// starts in flight and 4 workers; compare with BenchmarkRawLifecycle.
func BenchmarkOneTask(b *testing.B) {
	env := streamstest.Start(b, streamstest.WithPartitions(benchPartitions))
	eng := openEngine(b, env, nil)
	ctx := context.Background()
	p := build(b, model.NewBuilder("one").StartEvent("s").
		ServiceTask("t", "", model.WithWorker("bench")).EndEvent("e").Sequence("s", "t", "e"))
	if _, err := eng.Deploy(ctx, p); err != nil {
		b.Fatal(err)
	}
	stop := benchWorkers(b, env, "bench", 4)
	defer stop()
	done := collectFacts(b, env.Conn, "one", instance.FactCompleted, b.N)
	var next atomic.Int64
	b.ResetTimer()
	b.SetParallelism(32)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := eng.Start(ctx, "one", nil, engine.InstanceID(fmt.Sprintf("i%d", next.Add(1)))); err != nil {
				b.Error(err)
				return
			}
		}
	})
	done.wait(b, 5*time.Minute)
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "instances/s")
}

// BenchmarkRawLifecycle is the JetStream ceiling for one job: enqueue →
// worker fetch → report published → job acked → report consumed.
func BenchmarkRawLifecycle(b *testing.B) {
	env := streamstest.Start(b)
	ctx := context.Background()
	js := env.JS
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "RAWJOBS", Subjects: []string{"raw.job.>"}, Retention: jetstream.WorkQueuePolicy}); err != nil {
		b.Fatal(err)
	}
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "RAWREP", Subjects: []string{"raw.rep.>"}, Retention: jetstream.WorkQueuePolicy}); err != nil {
		b.Fatal(err)
	}
	jobsC, _ := js.CreateOrUpdateConsumer(ctx, "RAWJOBS", jetstream.ConsumerConfig{Durable: "w", AckPolicy: jetstream.AckExplicitPolicy, MaxAckPending: 100000})
	repC, _ := js.CreateOrUpdateConsumer(ctx, "RAWREP", jetstream.ConsumerConfig{Durable: "e", AckPolicy: jetstream.AckExplicitPolicy, MaxAckPending: 100000})
	var consumed atomic.Int64
	all := make(chan struct{})
	ectx, cancel := context.WithCancel(ctx)
	defer cancel()
	engineNC := env.NewConn(b)
	go func() { // the "engine": consume reports, ack the job on the worker's behalf
		for ectx.Err() == nil {
			batch, err := repC.Fetch(64, jetstream.FetchMaxWait(100*time.Millisecond))
			if err != nil {
				continue
			}
			for m := range batch.Messages() {
				_ = engineNC.Publish(string(m.Data()), []byte("+ACK"))
				_ = m.Ack()
				if consumed.Add(1) == int64(b.N) {
					close(all)
				}
			}
		}
	}()
	for range 4 {
		nc := env.NewConn(b)
		wjs, _ := jetstream.New(nc)
		go func() {
			for ectx.Err() == nil {
				batch, err := jobsC.Fetch(64, jetstream.FetchMaxWait(100*time.Millisecond))
				if err != nil {
					continue
				}
				for m := range batch.Messages() {
					_, _ = wjs.PublishAsync("raw.rep.x", []byte(m.Reply()))
				}
				<-wjs.PublishAsyncComplete()
			}
		}()
	}
	payload := make([]byte, 200)
	b.ResetTimer()
	for i := range b.N {
		if _, err := js.PublishAsync("raw.job."+fmt.Sprint(i), payload); err != nil {
			b.Fatal(err)
		}
		if i%256 == 255 {
			<-js.PublishAsyncComplete()
		}
	}
	select {
	case <-all:
	case <-time.After(5 * time.Minute):
		b.Fatal("raw lifecycle did not finish")
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "jobs/s")
	_ = nats.DefaultURL
}
