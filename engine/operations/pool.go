package operations

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetbpm/jetbpm/engine/checkpoint"
	"github.com/jetbpm/jetbpm/engine/errdefs"
	"github.com/jetbpm/jetbpm/engine/instance"
	"github.com/jetbpm/jetbpm/engine/outbox"
)

// A Pool runs the in-process operations of a node's instances
// beside the partition loops (docs/engine.md §3.1). The publisher hands it
// each RunOperation effect once the checkpoint that parked the task and
// the rest of its outbox are stored; a bounded pool of goroutines runs
// them, and each result goes back to its instance as an OperationDone
// event on the events stream. Nothing here is needed for correctness
// after a crash: the checkpoint's outbox and the operation's durable
// timeout are.
type Pool struct {
	exec       instance.Executor
	js         jetstream.JetStream
	partitions int
	// maxEvent bounds an encoded result event, like any request to the
	// events stream.
	maxEvent int
	now      func() time.Time
	log      *slog.Logger
	metrics  Metrics

	queue   chan *operationRun
	ctx     context.Context // ends when Close gives up on the runs left
	stop    context.CancelFunc
	workers sync.WaitGroup

	// sending is held (shared) while a submit may send on queue, and
	// exclusively to close it.
	sending sync.RWMutex

	mu     sync.Mutex
	runs   map[string]*operationRun // queued or running here, by wait
	closed bool
}

// operationRun is one run of an operation, for the operation wait wait.
type operationRun struct {
	wait   string
	call   instance.Call
	ctx    context.Context // ends at the operation's deadline, or when cancelled
	cancel context.CancelFunc
}

// submitWait bounds how long a hand-over waits for room in the queue
// before it counts as a failed publish.
const submitWait = 10 * time.Second

// PoolConfig is what a Pool runs with. Every field is required.
type PoolConfig struct {
	// Exec runs an operation (a *Registry).
	Exec instance.Executor
	// JS publishes the results to the events stream, whose partitions
	// are Partitions.
	JS         jetstream.JetStream
	Partitions int
	// MaxEvent bounds an encoded result event, like any request to the
	// events stream: a larger result fails its task.
	MaxEvent int
	// Concurrency is how many operations run at once, and how many wait
	// for a slot before a hand-over blocks.
	Concurrency int
	// Now is the engine's clock (a run's deadline is on it).
	Now     func() time.Time
	Log     *slog.Logger
	Metrics Metrics
}

// NewPool starts a pool of cfg.Concurrency goroutines. Register its
// effects with a publisher (Handle); Close stops it.
func NewPool(cfg PoolConfig) *Pool {
	ctx, stop := context.WithCancel(context.Background())
	r := &Pool{
		exec: cfg.Exec, js: cfg.JS, partitions: cfg.Partitions, maxEvent: cfg.MaxEvent,
		now: cfg.Now, log: cfg.Log, metrics: cfg.Metrics,
		queue: make(chan *operationRun, cfg.Concurrency),
		ctx:   ctx, stop: stop, runs: map[string]*operationRun{},
	}
	for range cfg.Concurrency {
		r.workers.Go(func() {
			for run := range r.queue {
				r.run(run)
			}
		})
	}
	return r
}

// Handle registers the pool's effects with pub: a run starts
// once the rest of its outbox is stored (its result must not overtake
// them); a cancel stops this node's run of the wait.
func (r *Pool) Handle(pub *outbox.Publisher) {
	pub.Handle(func(_ context.Context, out *outbox.Outbox, eff instance.Effect) error {
		out.AfterStored(func(ctx context.Context) error {
			if err := r.submit(ctx, eff); err != nil {
				return fmt.Errorf("effect %s: %w", eff.ID, err)
			}
			return nil
		})
		return nil
	}, instance.RunOperation)
	pub.Handle(func(_ context.Context, _ *outbox.Outbox, eff instance.Effect) error {
		r.cancel(eff.Wait)
		return nil
	}, instance.CancelOperation)
}

// submit queues the run an effect asks for. A run of the same wait already
// queued or running on this node is not started again. It returns an
// error when the queue has had no room for submitWait, or ctx ended.
func (r *Pool) submit(ctx context.Context, eff instance.Effect) error {
	if eff.Call == nil {
		return fmt.Errorf("operation effect %s has no call", eff.ID)
	}
	r.sending.RLock()
	defer r.sending.RUnlock()
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return errdefs.ErrClosed
	}
	if _, dup := r.runs[eff.Wait]; dup {
		r.mu.Unlock()
		return nil
	}
	run := &operationRun{wait: eff.Wait, call: *eff.Call}
	if eff.Due.IsZero() {
		run.ctx, run.cancel = context.WithCancel(r.ctx)
	} else {
		// Due is on the engine's clock; the context's deadline on the wall clock.
		run.ctx, run.cancel = context.WithDeadline(r.ctx, time.Now().Add(eff.Due.Sub(r.now())))
	}
	r.runs[eff.Wait] = run
	r.mu.Unlock()

	timeout := time.NewTimer(submitWait)
	defer timeout.Stop()
	select {
	case r.queue <- run:
		return nil
	case <-ctx.Done():
		r.forget(run)
		return ctx.Err()
	case <-timeout.C:
		r.forget(run)
		return fmt.Errorf("no room to run operation %q: %d operations queued for %v", run.call.Operation, cap(r.queue), submitWait)
	}
}

// cancel stops the run of wait on this node, if there is one: its task
// ended without it. A result it still returns is discarded.
func (r *Pool) cancel(wait string) {
	r.mu.Lock()
	run := r.runs[wait]
	r.mu.Unlock()
	if run != nil {
		run.cancel()
	}
}

func (r *Pool) forget(run *operationRun) {
	run.cancel()
	r.mu.Lock()
	if r.runs[run.wait] == run {
		delete(r.runs, run.wait)
	}
	r.mu.Unlock()
}

func (r *operationRun) attrs() []any {
	return []any{"instance", r.call.InstanceID, "node", r.call.Node, "operation", r.call.Operation, "activation", r.call.Activation}
}

// run calls the operation on a goroutine of its own and waits for it, its
// deadline or its cancellation, whichever comes first, then reports the
// result. An operation that outlives its deadline or cancellation cannot
// be stopped: it runs on without its slot, and its result is discarded.
func (r *Pool) run(run *operationRun) {
	defer r.forget(run)
	if err := run.ctx.Err(); err != nil {
		// Its deadline passed, or it was cancelled, while it was queued.
		if errors.Is(err, context.DeadlineExceeded) {
			r.report(run, &instance.OperationResult{Kind: instance.OperationTimedOut})
		}
		return
	}
	r.metrics.Running.Add(1)
	defer r.metrics.Running.Add(-1)
	results := make(chan *instance.OperationResult, 1) // the call can always send and end
	go func() { results <- instance.Invoke(run.ctx, r.exec, run.call) }()
	select {
	case res := <-results:
		switch err := run.ctx.Err(); {
		case err == nil:
			r.report(run, res)
		case errors.Is(err, context.DeadlineExceeded):
			// It returned, but after its deadline: the task times out.
			r.discarded(run, res, "it came after the operation's deadline")
			r.report(run, &instance.OperationResult{Kind: instance.OperationTimedOut})
		default:
			r.discarded(run, res, "its task moved on or the engine closed")
		}
	case <-run.ctx.Done():
		r.metrics.Overdue.Add(1)
		timedOut := errors.Is(run.ctx.Err(), context.DeadlineExceeded)
		go func() {
			res := <-results
			r.metrics.Overdue.Add(-1)
			why := "its task moved on or the engine closed"
			if timedOut {
				why = "it came after the operation's deadline"
			}
			r.discarded(run, res, why)
		}()
		if timedOut {
			r.log.Warn("operation timed out", run.attrs()...)
			r.report(run, &instance.OperationResult{Kind: instance.OperationTimedOut})
		}
	}
}

func (r *Pool) discarded(run *operationRun, res *instance.OperationResult, why string) {
	r.metrics.Results.With("discarded").Inc()
	r.log.Info("operation result discarded", append(run.attrs(), "result", res.Kind, "reason", why)...)
}

// report publishes res to the run's instance as an OperationDone event,
// retrying a few times; if it cannot, the operation's durable timeout
// decides.
func (r *Pool) report(run *operationRun, res *instance.OperationResult) {
	msg, err := r.resultMsg(run, res)
	if err == nil && len(msg.Data) > r.maxEvent {
		size := len(msg.Data)
		res = &instance.OperationResult{Kind: instance.OperationFailed, Message: fmt.Sprintf(
			"operation %q returned %d bytes encoded, over the %d-byte limit of an event; return less", run.call.Operation, size, r.maxEvent)}
		msg, err = r.resultMsg(run, res)
	}
	if err != nil {
		r.log.Error("operation result not published: cannot encode it; its timeout will decide", append(run.attrs(), "err", err)...)
		return
	}
	r.metrics.Results.With(string(res.Kind)).Inc()
	backoff := 100 * time.Millisecond
	for attempt := 1; ; attempt++ {
		ctx, cancel := context.WithTimeout(r.ctx, 5*time.Second)
		_, err = r.js.PublishMsg(ctx, msg)
		cancel()
		if err == nil {
			r.log.Debug("operation result", append(run.attrs(), "result", res.Kind)...)
			return
		}
		if attempt == 5 || r.ctx.Err() != nil {
			break
		}
		select {
		case <-time.After(backoff):
		case <-r.ctx.Done():
		}
		backoff *= 2
	}
	r.log.Warn("operation result not published; its timeout will decide", append(run.attrs(), "result", res.Kind, "err", err)...)
}

func (r *Pool) resultMsg(run *operationRun, res *instance.OperationResult) (*nats.Msg, error) {
	ev := instance.OperationEvent(run.wait, res)
	return checkpoint.EventMsg(checkpoint.Envelope{Instance: run.call.InstanceID, Event: &ev}, ev.ID, r.partitions)
}

// Close stops taking runs and waits until the queued and running ones are
// done, or ctx ends: then their contexts are cancelled and nothing more
// is published. Operations that ignore their context are not waited for.
func (r *Pool) Close(ctx context.Context) {
	r.sending.Lock()
	r.mu.Lock()
	closed := r.closed
	r.closed = true
	r.mu.Unlock()
	if !closed {
		close(r.queue)
	}
	r.sending.Unlock()
	if closed {
		return
	}
	done := make(chan struct{})
	go func() { r.workers.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		r.stop()
		<-done
	}
	r.stop()
}
