package workerkit

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Options configure a Worker. The zero value works.
type Options struct {
	// Name identifies the worker in its reports and the engine's logs
	// (default hostname-pid).
	Name string
	// Logger receives the worker's records (default slog.Default()).
	Logger *slog.Logger
	// ShutdownTimeout bounds how long Run waits for the jobs in flight
	// once its ctx is done (default 30 s); then it cancels their contexts.
	ShutdownTimeout time.Duration
	// VerdictTimeout is how long the worker waits for the engine to answer
	// a report before publishing it again (default 30 s). A report is
	// published again, and a failed publish retried, until the job's lock
	// expires (an outcome: for one VerdictTimeout at least).
	VerdictTimeout time.Duration
	// PollWait is the longest one fetch waits for a job (default 1 s); it
	// bounds how long Run takes to stop fetching.
	PollWait time.Duration
}

func (o *Options) setDefaults() {
	if o.Name == "" {
		host, _ := os.Hostname()
		if host == "" {
			host = "worker"
		}
		o.Name = fmt.Sprintf("%s-%d", host, os.Getpid())
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.ShutdownTimeout <= 0 {
		o.ShutdownTimeout = 30 * time.Second
	}
	if o.VerdictTimeout <= 0 {
		o.VerdictTimeout = 30 * time.Second
	}
	if o.PollWait <= 0 {
		o.PollWait = time.Second
	}
}

// Worker fetches the jobs of its topics and runs their handlers. Register
// handlers with Handle, then call Run once.
type Worker struct {
	nc   *nats.Conn
	js   jetstream.JetStream
	opts Options
	log  *slog.Logger

	mu       sync.Mutex
	handlers []*handler
	started  bool

	verdicts *VerdictInbox // set by Run
}

// handler is one Handle registration.
type handler struct {
	topic string
	fn    HandlerFunc
	handleConfig
}

// New returns a worker on a NATS connection to the jetbpm cluster. It does
// no I/O; Run does.
func New(nc *nats.Conn, opts Options) (*Worker, error) {
	if nc == nil {
		return nil, errors.New("workerkit: nil NATS connection")
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("workerkit: %w", err)
	}
	opts.setDefaults()
	return &Worker{nc: nc, js: js, opts: opts, log: opts.Logger.With("worker", opts.Name)}, nil
}

// Handle runs fn for every job of topic. Like http.ServeMux.Handle, it
// panics on a programming error: an empty topic, a nil fn, a topic
// registered twice, or a call after Run.
func (w *Worker) Handle(topic string, fn HandlerFunc, opts ...HandleOption) {
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case topic == "":
		panic("workerkit: Handle with an empty topic")
	case fn == nil:
		panic("workerkit: Handle " + topic + " with a nil handler")
	case w.started:
		panic("workerkit: Handle " + topic + " after Run")
	}
	for _, h := range w.handlers {
		if h.topic == topic {
			panic("workerkit: topic " + topic + " is already handled")
		}
	}
	h := &handler{topic: topic, fn: fn, handleConfig: handleConfig{concurrency: 1}}
	for _, o := range opts {
		o(&h.handleConfig)
	}
	w.handlers = append(w.handlers, h)
}

// Run fetches and runs jobs until ctx is done, then stops fetching, waits
// up to Options.ShutdownTimeout for the jobs in flight to finish and be
// reported, and returns. It returns nil after a clean drain; an error if
// it had to cancel jobs, or could not start. A topic whose consumer does
// not exist yet (no process using it is deployed) is waited for.
func (w *Worker) Run(ctx context.Context) error {
	w.mu.Lock()
	if w.started {
		w.mu.Unlock()
		return errors.New("workerkit: Run called twice")
	}
	w.started = true
	handlers := w.handlers
	w.mu.Unlock()
	if len(handlers) == 0 {
		return errors.New("workerkit: Run with no handlers")
	}

	v, err := OpenVerdictInbox(w.nc, w.log)
	if err != nil {
		return err
	}
	defer v.Close()
	w.verdicts = v

	// Jobs run under their own context, so that ctx ending stops the
	// fetching only; they are cancelled when the drain times out.
	jobsCtx, cancelJobs := context.WithCancelCause(context.WithoutCancel(ctx))
	defer cancelJobs(nil)
	var pollers, inFlight sync.WaitGroup
	for _, h := range handlers {
		pollers.Go(func() { w.poll(ctx, jobsCtx, h, &inFlight) })
	}
	w.log.Info("worker running", "topics", topics(handlers))
	pollers.Wait() // they return once ctx is done and their fetch ends

	drained := make(chan struct{})
	go func() { inFlight.Wait(); close(drained) }()
	select {
	case <-drained:
		w.log.Info("worker stopped")
		return nil
	case <-time.After(w.opts.ShutdownTimeout):
	}
	cancelJobs(errShutdown)
	w.log.Warn("shutdown timeout: cancelling the jobs in flight; they will be redelivered", "timeout", w.opts.ShutdownTimeout)
	select {
	case <-drained:
	case <-time.After(5 * time.Second):
		return fmt.Errorf("workerkit: shutdown: handlers still running %s after their jobs were cancelled", 5*time.Second)
	}
	return fmt.Errorf("workerkit: shutdown: jobs in flight cancelled after %s", w.opts.ShutdownTimeout)
}

// errShutdown and ErrLockLost are the causes of a cancelled handler ctx.
var errShutdown = errors.New("workerkit: worker shutting down")

// ErrLockLost is the cause (context.Cause) of a handler's ctx cancelled
// because the worker lost the job's lock: the engine refused to extend it
// or did not answer in time. The job will be redelivered.
var ErrLockLost = errors.New("workerkit: job lock lost")

func topics(hs []*handler) []string {
	out := make([]string, len(hs))
	for i, h := range hs {
		out[i] = h.topic
	}
	return out
}
