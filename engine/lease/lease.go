// Package lease lends jobs to workers that reach the engine through a
// door other than NATS — Camunda 7's external-task REST API, Camunda 8's
// gRPC gateway — so that such a worker holds a JetStream delivery exactly
// as a NATS worker does (docs/jobs.md): the lock is the topic consumer's
// AckWait, a redelivery is checked in with the engine before it is lent,
// and every report goes to the engine for the delivery it names and is
// fenced by it. A door names a lease to its client by the delivery (the
// stream sequence and the delivery count), and finds it again with Job.
//
//	l, err := lease.New(eng, nc, lease.Options{})
//	got := l.Fetch(ctx, lease.Request{Worker: "w1", Max: 10, Wait: 20 * time.Second,
//		Topics: []lease.Topic{{Name: "payments"}}})
//	for _, j := range got {
//		v, err := l.Report(ctx, j.Job, j.Subject, jobs.Report{Kind: jobs.Complete, Output: out})
//	}
//
// A lender never gives up a job the server handed out without telling the
// engine: a lease its client can no longer receive, or one a topic's
// filter refuses, is released for immediate redelivery.
package lease

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetbpm/jetbpm/engine"
	"github.com/jetbpm/jetbpm/jobs"
	"github.com/jetbpm/jetbpm/streams"
	"github.com/jetbpm/jetbpm/workerkit"
)

// Options configure a Lender. The zero value works.
type Options struct {
	// Logger receives the lender's records (default slog.Default()).
	Logger *slog.Logger
	// VerdictTimeout bounds the wait for the engine's answer to a report;
	// default 30 s.
	VerdictTimeout time.Duration
	// PollSlice is the longest one JetStream pull waits inside a long
	// poll (default 10 s); a client that goes away costs at most this.
	PollSlice time.Duration
	// Now is the clock for lock expiration times (default time.Now).
	Now func() time.Time
}

// A Lender fetches jobs for door workers and carries their reports.
type Lender struct {
	eng      *engine.Engine
	nc       *nats.Conn
	js       jetstream.JetStream
	opts     Options
	log      *slog.Logger
	verdicts *workerkit.VerdictInbox

	consumers sync.Map // topic → jetstream.Consumer
	mu        sync.Mutex
	stream    jetstream.Stream
}

// New returns a Lender over eng; nc is a connection allowed to pull from
// the topic consumers, read JETBPM_JOBS, publish reports and receive on
// its inboxes (the engine's own connection will do). Close releases it.
func New(eng *engine.Engine, nc *nats.Conn, opts Options) (*Lender, error) {
	if eng == nil || nc == nil {
		return nil, errors.New("lease: nil engine or NATS connection")
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.VerdictTimeout <= 0 {
		opts.VerdictTimeout = 30 * time.Second
	}
	if opts.PollSlice <= 0 {
		opts.PollSlice = 10 * time.Second
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("lease: %w", err)
	}
	v, err := workerkit.OpenVerdictInbox(nc, opts.Logger)
	if err != nil {
		return nil, err
	}
	return &Lender{eng: eng, nc: nc, js: js, opts: opts, log: opts.Logger, verdicts: v}, nil
}

// Close stops receiving verdicts: reports still waiting fail.
func (l *Lender) Close() { l.verdicts.Close() }

// A Topic is one topic of a fetch. Accept, if set, filters its jobs: a
// job it refuses is released at once.
type Topic struct {
	Name   string
	Accept func(job *jobs.Job, view *engine.JobView) bool
}

// A Request asks for up to Max jobs of its topics for Worker, waiting up
// to Wait for the first.
type Request struct {
	Worker string
	Max    int
	Wait   time.Duration
	Topics []Topic
}

// A Lease is one delivery of a job, lent to a worker.
type Lease struct {
	Job  *jobs.Job
	View *engine.JobView
	// Subject is the delivery's ack reply subject, Delivery what it names.
	Subject  string
	Delivery jobs.Delivery
	// Topic is the index of the request's topic the job came from.
	Topic int
	// Until is when the lock expires unless extended.
	Until time.Time
	// Retries is the number of executions left, this one included.
	Retries int
}

// Fetch returns up to req.Max leases, waiting up to req.Wait for the first;
// it returns early, with none, when ctx ends. Leases past req.Max or
// fetched for a client that is gone are released.
func (l *Lender) Fetch(ctx context.Context, req Request) []Lease {
	if req.Max <= 0 || len(req.Topics) == 0 {
		return nil
	}
	deadline := time.Now().Add(req.Wait)
	var out []Lease
	for {
		var got []fetched
		for i := range req.Topics {
			if n := req.Max - len(out) - len(got); n > 0 {
				got = append(got, l.pull(ctx, req.Topics[i].Name, i, n, 0)...)
			}
		}
		more, rejected := l.lendAll(ctx, req, got)
		out = append(out, more...)
		wait := time.Until(deadline)
		if len(out) > 0 || wait <= 0 || ctx.Err() != nil {
			break
		}
		if rejected > 0 {
			// Jobs a filter refused went back to the queue: do not take
			// them again at once.
			select {
			case <-time.After(min(wait, time.Second)):
			case <-ctx.Done():
			}
			continue
		}
		// Long poll: one pull per topic waits for its first job.
		slice := min(wait, l.opts.PollSlice)
		var mu sync.Mutex
		var wg sync.WaitGroup
		got = nil
		for i := range req.Topics {
			wg.Go(func() {
				f := l.pull(ctx, req.Topics[i].Name, i, 1, slice)
				mu.Lock()
				got = append(got, f...)
				mu.Unlock()
			})
		}
		wg.Wait()
		more, _ = l.lendAll(ctx, req, got)
		out = append(out, more...)
		// With one, fill the rest of Max with what is there now.
	}
	if len(out) > req.Max {
		for _, s := range out[req.Max:] {
			go l.Release(s.Job, s.Subject)
		}
		out = out[:req.Max]
	}
	if ctx.Err() != nil {
		// The client is gone: nobody will work these.
		for _, s := range out {
			go l.Release(s.Job, s.Subject)
		}
		return nil
	}
	return out
}

// fetched is one job message taken from a topic consumer.
type fetched struct {
	msg   jetstream.Msg
	topic int
}

// pull fetches up to n jobs of a topic: what is there now (wait 0), or
// waiting up to wait for them. A topic nobody deployed yet has no
// consumer, hence no jobs.
func (l *Lender) pull(ctx context.Context, topic string, index, n int, wait time.Duration) []fetched {
	cons, err := l.Consumer(ctx, topic)
	if err != nil {
		if !errors.Is(err, jetstream.ErrConsumerNotFound) && !errors.Is(err, jetstream.ErrStreamNotFound) {
			l.log.Warn("cannot look up the topic's consumer", "topic", topic, "err", err)
		}
		if wait > 0 {
			select {
			case <-time.After(wait):
			case <-ctx.Done():
			}
		}
		return nil
	}
	var batch jetstream.MessageBatch
	if wait == 0 {
		batch, err = cons.FetchNoWait(n)
	} else {
		batch, err = cons.Fetch(n, jetstream.FetchMaxWait(wait))
	}
	if err != nil {
		l.consumers.Delete(topic)
		l.log.Warn("fetch failed", "topic", topic, "err", err)
		return nil
	}
	var out []fetched
	for m := range batch.Messages() {
		out = append(out, fetched{msg: m, topic: index})
	}
	if err := batch.Error(); err != nil && !errors.Is(err, jetstream.ErrNoMessages) && !errors.Is(err, nats.ErrTimeout) {
		l.consumers.Delete(topic)
		l.log.Debug("fetch ended", "topic", topic, "err", err)
	}
	return out
}

// Consumer returns the consumer of topic, cached; a door that needs its
// state asks here too.
func (l *Lender) Consumer(ctx context.Context, topic string) (jetstream.Consumer, error) {
	if c, ok := l.consumers.Load(topic); ok {
		return c.(jetstream.Consumer), nil
	}
	lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	c, err := l.js.Consumer(lctx, streams.JobsStream, streams.TopicConsumer(topic))
	if err != nil {
		return nil, err
	}
	l.consumers.Store(topic, c)
	return c, nil
}

// lendAll turns fetched job messages into leases, concurrently. It returns
// them and how many a filter refused.
func (l *Lender) lendAll(ctx context.Context, req Request, got []fetched) ([]Lease, int) {
	if len(got) == 0 {
		return nil, 0
	}
	results := make([]*Lease, len(got))
	rejected := make([]bool, len(got))
	var wg sync.WaitGroup
	for i, f := range got {
		wg.Go(func() { results[i], rejected[i] = l.lend(ctx, req, f) })
	}
	wg.Wait()
	var out []Lease
	n := 0
	for i, s := range results {
		if s != nil {
			out = append(out, *s)
		}
		if rejected[i] {
			n++
		}
	}
	return out, n
}

// lend checks a fetched message in: a redelivery only if the engine says
// it is current (which also counts the expired ones as attempts), and any
// job only while its instance still waits for it and the topic accepts it.
func (l *Lender) lend(ctx context.Context, req Request, f fetched) (s *Lease, rejected bool) {
	now := l.opts.Now()
	job, err := DecodeJob(f.msg.Data())
	if err != nil {
		l.log.Warn("malformed job message; left to expire", "subject", f.msg.Subject(), "err", err)
		return nil, false
	}
	subject := f.msg.Reply()
	d, err := jobs.ParseDelivery(subject)
	if err != nil {
		l.log.Warn("job message with an unknown reply subject; left to expire", "reply", subject, "err", err)
		return nil, false
	}
	if d.Count > 1 {
		v, err := l.Report(context.WithoutCancel(ctx), job, subject, jobs.Report{Kind: jobs.CheckIn, Worker: req.Worker})
		if err != nil || !v.Accepted {
			l.log.Info("redelivery not lent", "job", job.ID, "delivery", d.Count, "verdict", v.Reason, "err", err)
			return nil, false
		}
	}
	view, err := l.eng.Job(context.WithoutCancel(ctx), job.Instance, job.ID)
	if err != nil {
		// Finished meanwhile: a release lets the engine terminate it.
		if errors.Is(err, engine.ErrNotFound) {
			l.Release(job, subject)
		} else {
			l.log.Warn("cannot read the job's instance; job left to expire", "job", job.ID, "err", err)
		}
		return nil, false
	}
	t := req.Topics[f.topic]
	if t.Accept != nil && !t.Accept(job, view) {
		l.Release(job, subject)
		return nil, true
	}
	return &Lease{Job: job, View: view, Subject: subject, Delivery: d, Topic: f.topic,
		Until:   now.Add(time.Duration(job.LockDurationMs) * time.Millisecond),
		Retries: max(view.Job.Budget-int(d.Count-1), 0)}, false
}

// Release gives a delivery back to the queue unrun: it is redelivered at
// once and does not count as an attempt. It logs what it could not do.
func (l *Lender) Release(job *jobs.Job, subject string) {
	v, err := l.Report(context.Background(), job, subject, jobs.Report{Kind: jobs.Release})
	if err != nil || !v.Accepted {
		l.log.Info("job not released; it returns when its lock expires", "job", job.ID, "reason", v.Reason, "err", err)
	}
}
