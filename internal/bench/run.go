package bench

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetbpm/jetbpm/engine"
	"github.com/jetbpm/jetbpm/engine/camunda8"
	"github.com/jetbpm/jetbpm/engine/checkpoint"
	"github.com/jetbpm/jetbpm/engine/history"
	"github.com/jetbpm/jetbpm/engine/instance"
	"github.com/jetbpm/jetbpm/streams"
	"github.com/jetbpm/jetbpm/workerkit"
)

func jetstreamOf(nc *nats.Conn) (jetstream.JetStream, error) { return jetstream.New(nc) }

// Run runs one benchmark.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	sc := scenarios[cfg.Scenario]
	e, err := setup(ctx, cfg, sc)
	if err != nil {
		return nil, fmt.Errorf("bench setup: %w", err)
	}
	defer e.close()

	res := &Result{Scenario: cfg.Scenario, Mode: "closed", Worker: cfg.Worker, History: cfg.History.String(), QueuedStarts: cfg.QueuedStarts}
	if cfg.NATSURL == "" {
		res.Durability = cmp.Or(cfg.Durability, "os")
	}
	if cfg.Rate > 0 {
		res.Mode = "open"
	}
	if cfg.Baseline {
		if res.Baseline, err = e.baseline(ctx); err != nil {
			return nil, fmt.Errorf("baseline: %w", err)
		}
	}
	due := time.Now().Add(max(cfg.Duration, 5*time.Second))
	p, err := sc.process(due).Build()
	if err != nil {
		return nil, err
	}
	if _, err := e.eng.Deploy(ctx, p); err != nil {
		return nil, err
	}
	tr := &tracker{}
	stopWatch, err := e.watchFinished(ctx, cfg.History, p.ID, tr)
	if err != nil {
		return nil, err
	}
	defer stopWatch()
	msgs := &messageLoad{name: sc.message}
	if sc.message != "" {
		msub, err := e.engNC.Subscribe(streams.FactSubject(streams.FactMessage, sc.message, engine.FactMessageCorrelated), msgs.correlatedFact)
		if err != nil {
			return nil, err
		}
		defer msub.Unsubscribe()
	}

	var pickup sample
	var jobsDone atomic.Int64
	startWorkers := func() error {
		switch {
		case sc.topic == "":
			return nil
		case cfg.Worker == "zeebe-grpc":
			res.Notes = append(res.Notes, "zeebe-grpc workers: enqueueToPickup is not measured (a Zeebe job does not carry its enqueue time)")
			return e.zeebeWorkers(ctx, sc, &jobsDone)
		case cfg.Worker == "c8rest":
			res.Notes = append(res.Notes, "c8rest workers: enqueueToPickup is not measured (a Camunda 8 job does not carry its enqueue time)")
			return e.restWorkers(ctx, sc, &jobsDone)
		}
		return e.workers(ctx, sc, &pickup, &jobsDone)
	}
	if !cfg.ParkFirst {
		if err := startWorkers(); err != nil {
			return nil, err
		}
	}

	before, t0, roundsBefore := readUsage(), time.Now(), e.syncRounds()
	var started atomic.Int64
	stopProgress := progress(cfg, t0, &started, tr)
	load := loader{e: e, p: p.ID, tr: tr, started: &started, msgs: msgs}
	if cfg.Worker == "zeebe-grpc" || cfg.Worker == "c8rest" {
		if load.ids, err = e.camunda8IDs(ctx); err != nil {
			return nil, err
		}
	}
	if cfg.Scenario == "timers" {
		load.from = due // the lag of each timer is what matters
	}
	switch {
	case cfg.Rate > 0:
		err = load.open(ctx, cfg.Rate, cfg.Duration)
	default:
		err = load.closed(ctx, cfg.Inflight, cfg.Duration, cfg.Instances)
	}
	if err == nil && cfg.Scenario == "timers" {
		if time.Now().After(due) {
			res.Notes = append(res.Notes, "the timers came due before every instance had started: raise --duration")
		}
		t0 = due
	}
	if err == nil && cfg.ParkFirst {
		res.Notes = append(res.Notes, fmt.Sprintf("%d instances parked before workers started; peak RSS then %d bytes", started.Load(), readUsage().peakRSS))
		t0 = time.Now()
		err = startWorkers()
	}
	if err == nil {
		err = tr.drain(ctx, started.Load(), time.Minute+cfg.Duration)
	}
	stopProgress()
	if err != nil {
		return nil, err
	}
	elapsed, after := time.Since(t0), readUsage()
	done := tr.completed.Load() + tr.failed.Load()
	res.Instances, res.Jobs, res.Seconds = done, jobsDone.Load(), elapsed.Seconds()
	res.InstancesPerSec = float64(done) / elapsed.Seconds()
	res.JobsPerSec = float64(res.Jobs) / elapsed.Seconds()
	res.LatencyMs.StartToComplete = tr.latency.summary()
	res.LatencyMs.EnqueueToPickup = pickup.summary()
	res.Messages = msgs.published.Load()
	res.LatencyMs.PublishToCorrelated = msgs.latency.summary()
	if done > 0 {
		res.CPUSecondsPer1000 = (after.cpu - before.cpu).Seconds() / float64(done) * 1000
		res.SyncRoundsPer1000 = float64(e.syncRounds()-roundsBefore) / float64(done) * 1000
	}
	res.PeakRSSBytes = after.peakRSS
	if res.Baseline != nil && res.Baseline.JobsPerSec > 0 {
		res.Ratio = res.InstancesPerSec / res.Baseline.JobsPerSec
	}
	if cfg.Engines > 1 {
		res.EngineCompleted = e.completedCounts(tr.completed.Load())
	}
	if f := tr.failed.Load(); f > 0 {
		res.Notes = append(res.Notes, fmt.Sprintf("%d instances did not complete", f))
	}
	if cfg.Scenario == "timers" {
		res.Notes = append(res.Notes, "timers: every timer is due at one moment; startToComplete is each instance's lag behind it, instances/s counts from it")
	}
	return res, nil
}

// workers runs cfg.Workers workerkit workers on the scenario's topic.
func (e *env) workers(ctx context.Context, sc *scenario, pickup *sample, jobsDone *atomic.Int64) error {
	for i := range e.cfg.Workers {
		nc, err := e.connect(e.cfg.WorkersTCP)
		if err != nil {
			return err
		}
		w, err := workerkit.New(nc, workerkit.Options{Name: fmt.Sprintf("bench-%d", i), Logger: e.cfg.Logger})
		if err != nil {
			return err
		}
		w.Handle(sc.topic, func(ctx context.Context, job *workerkit.Job) (map[string]any, error) {
			if job.Delivery == 1 && !job.EnqueuedAt.IsZero() {
				pickup.add(time.Since(job.EnqueuedAt))
			}
			out, err := sc.handle(ctx, job)
			if err == nil {
				jobsDone.Add(1)
			}
			return out, err
		}, workerkit.Concurrency(64))
		wctx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { defer close(done); _ = w.Run(wctx) }()
		e.cleanup = append(e.cleanup, func() { cancel(); <-done })
	}
	return nil
}

// loader starts instances.
type loader struct {
	e       *env
	p       string
	tr      *tracker
	started *atomic.Int64
	seq     atomic.Int64
	from    time.Time // when set, latency counts from here instead of the start
	msgs    *messageLoad
	ids     *camunda8.IDs // when set, instance ids are Camunda 8 keys
}

func (l *loader) startOne(ctx context.Context, at time.Time) (*start, error) {
	seq := l.seq.Add(1)
	id := fmt.Sprintf("b%d", seq)
	if l.ids != nil {
		// As a Camunda 8 client's create names its instance: by its key.
		_, kid, err := l.ids.NewInstance(ctx)
		if err != nil {
			return nil, err
		}
		id = kid
	}
	if !l.from.IsZero() {
		at = l.from
	}
	s := l.tr.begin(id, at)
	vars := map[string]any{"n": 1}
	if l.msgs.name != "" {
		vars["key"] = id
	}
	eng := l.e.engines[int(seq)%len(l.e.engines)]
	if _, err := eng.Start(ctx, l.p, vars, engine.InstanceID(id)); err != nil {
		return nil, err
	}
	l.started.Add(1)
	if l.msgs.name != "" {
		if err := l.msgs.publish(ctx, eng, id); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// messageLoad publishes the message scenario's messages, one per instance
// under its id as correlation key, and times each from its publish to its
// correlated fact.
type messageLoad struct {
	name      string
	at        sync.Map // key → when its publish began
	published atomic.Int64
	latency   sample
}

func (m *messageLoad) publish(ctx context.Context, eng *engine.Engine, key string) error {
	m.at.Store(key, time.Now()) // the fact may come before PublishMessage returns
	if _, err := eng.PublishMessage(ctx, engine.Message{Name: m.name, Key: key, ID: key, TTL: messageTTL}); err != nil {
		return fmt.Errorf("publish message %s: %w", key, err)
	}
	m.published.Add(1)
	return nil
}

func (m *messageLoad) correlatedFact(msg *nats.Msg) {
	var f engine.MessageFact
	if json.Unmarshal(msg.Data, &f) != nil {
		return
	}
	if at, ok := m.at.LoadAndDelete(f.Key); ok { // once: facts are at-least-once
		m.latency.add(time.Since(at.(time.Time)))
	}
}

// closed keeps inflight instances running until d passes or n are
// started; latency counts from each start.
func (l *loader) closed(ctx context.Context, inflight int, d time.Duration, n int) error {
	deadline := time.Now().Add(d)
	var wg sync.WaitGroup
	errs := make(chan error, inflight)
	for range inflight {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				if n > 0 && l.seq.Load() >= int64(n) || n == 0 && time.Now().After(deadline) {
					return
				}
				s, err := l.startOne(ctx, time.Now())
				if err != nil {
					errs <- err
					return
				}
				if n > 0 && l.e.cfg.ParkFirst || l.e.cfg.Scenario == "timers" {
					continue // do not wait: park them all
				}
				select {
				case <-s.done:
				case <-ctx.Done():
				}
			}
		}()
	}
	wg.Wait()
	select {
	case err := <-errs:
		return err
	default:
		return ctx.Err()
	}
}

// open starts instances at rate for d; latency counts from each start's
// scheduled time, so a stall shows up (no coordinated omission).
func (l *loader) open(ctx context.Context, rate float64, d time.Duration) error {
	t0 := time.Now()
	interval := time.Duration(float64(time.Second) / rate)
	var wg sync.WaitGroup
	var firstErr atomic.Value
	for i := 0; ; i++ {
		at := t0.Add(time.Duration(i) * interval)
		if at.Sub(t0) >= d || ctx.Err() != nil {
			break
		}
		if wait := time.Until(at); wait > 0 {
			time.Sleep(wait) // pacing the schedule, not synchronising
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := l.startOne(ctx, at); err != nil {
				firstErr.CompareAndSwap(nil, err)
			}
		}()
	}
	wg.Wait()
	if err, _ := firstErr.Load().(error); err != nil {
		return err
	}
	return ctx.Err()
}

// drain waits until every started instance has finished.
func (t *tracker) drain(ctx context.Context, started int64, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for t.completed.Load()+t.failed.Load() < started {
		if time.Now().After(deadline) {
			return fmt.Errorf("only %d of %d instances finished within %s", t.completed.Load()+t.failed.Load(), started, limit)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
	return nil
}

func progress(cfg Config, t0 time.Time, started *atomic.Int64, tr *tracker) (stop func()) {
	if cfg.Progress == nil {
		return func() {}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				cfg.Progress(Progress{Elapsed: time.Since(t0), Started: started.Load(), Completed: tr.completed.Load() + tr.failed.Load()})
			}
		}
	}()
	return func() { close(done); wg.Wait() }
}

// String renders a result as the table jetbpm bench prints.
func (r *Result) String() string {
	var b strings.Builder
	row := func(k string, v any) { fmt.Fprintf(&b, "%-28s %v\n", k, v) }
	row("scenario", r.Scenario+" ("+r.Mode+" loop, "+r.Worker+" workers)")
	row("instances", fmt.Sprintf("%d in %.1fs", r.Instances, r.Seconds))
	row("instances/s", fmt.Sprintf("%.0f", r.InstancesPerSec))
	row("jobs/s", fmt.Sprintf("%.0f", r.JobsPerSec))
	pl := func(p Percentiles) string {
		return fmt.Sprintf("p50 %.2f  p95 %.2f  p99 %.2f  max %.2f ms", p.P50, p.P95, p.P99, p.Max)
	}
	row("start→complete", pl(r.LatencyMs.StartToComplete))
	if r.LatencyMs.EnqueueToPickup.N > 0 {
		row("enqueue→pickup", pl(r.LatencyMs.EnqueueToPickup))
	}
	if r.Messages > 0 {
		row("messages", r.Messages)
		row("publish→correlated", pl(r.LatencyMs.PublishToCorrelated))
	}
	if len(r.EngineCompleted) > 0 {
		row("completed per engine node", fmt.Sprint(r.EngineCompleted))
	}
	row("CPU s per 1000 instances", fmt.Sprintf("%.3f", r.CPUSecondsPer1000))
	if r.SyncRoundsPer1000 > 0 {
		row("sync rounds per 1000 instances", fmt.Sprintf("%.0f", r.SyncRoundsPer1000))
	}
	row("peak RSS", fmt.Sprintf("%.0f MiB", float64(r.PeakRSSBytes)/(1<<20)))
	if r.Baseline != nil {
		row("baseline raw jobs/s", fmt.Sprintf("%.0f", r.Baseline.JobsPerSec))
		row("ratio", fmt.Sprintf("%.3f", r.Ratio))
	}
	for _, n := range r.Notes {
		row("note", n)
	}
	return b.String()
}

// watchFinished tells tr of each finished instance of process: from its
// lifecycle fact, or below a history level that writes them, from the
// summary headers of its last checkpoint (a headers-only consumer of the
// instances bucket, as the instance index reads it).
func (e *env) watchFinished(ctx context.Context, lvl history.Level, process string, tr *tracker) (stop func(), err error) {
	if lvl.Keeps(history.Instance) {
		sub, err := e.engNC.Subscribe(streams.FactFilter(streams.FactInstance, process), func(m *nats.Msg) {
			var f instance.Fact
			if instance.UnmarshalFact(m.Data, &f) == nil && (f.Kind == instance.FactCompleted || f.Kind == instance.FactFailed || f.Kind == instance.FactTerminated) {
				tr.finish(f.Instance, f.Kind == instance.FactCompleted, time.Now())
			}
		})
		if err != nil {
			return nil, err
		}
		return func() { _ = sub.Unsubscribe() }, nil
	}
	js, err := jetstream.New(e.engNC)
	if err != nil {
		return nil, err
	}
	prefix := "$KV." + streams.InstancesBucket + "."
	cons, err := js.OrderedConsumer(ctx, "KV_"+streams.InstancesBucket, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{prefix + ">"}, DeliverPolicy: jetstream.DeliverNewPolicy, HeadersOnly: true,
	})
	if err != nil {
		return nil, err
	}
	cc, err := cons.Consume(func(m jetstream.Msg) {
		if m.Headers().Get(checkpoint.HeaderProcess) != process {
			return
		}
		switch st := instance.Status(m.Headers().Get(checkpoint.HeaderStatus)); st {
		case instance.Completed, instance.Failed, instance.Terminated:
			tr.finish(strings.TrimPrefix(m.Subject(), prefix), st == instance.Completed, time.Now())
		}
	})
	if err != nil {
		return nil, err
	}
	return cc.Stop, nil
}
