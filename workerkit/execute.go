package workerkit

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetbpm/jetbpm/jobs"
)

// execution is one delivery of a job being worked on.
type execution struct {
	w        *Worker
	h        *handler
	msg      jetstream.Msg
	raw      jobs.Job
	delivery int
	enqueued time.Time
	lock     time.Duration
	log      *slog.Logger
	// lockUntil is when the lock expires as far as the worker knows; the
	// extender owns it once the handler runs.
	lockUntil time.Time
	received  time.Time
}

// execute runs one delivery: check in if it is a redelivery, run the
// handler (and, under WorkerTrusted, the task's policy) while extending the
// lock, report the outcome.
func (w *Worker) execute(ctx context.Context, h *handler, msg jetstream.Msg) {
	received := time.Now()
	x := &execution{w: w, h: h, msg: msg, received: received, log: w.log.With("topic", h.topic)}
	if err := jobs.UnmarshalJob(msg.Data(), &x.raw); err != nil || x.raw.ID == "" || x.raw.ReportTo == "" {
		// Without the job's id and report subject nothing can be said to
		// the engine; the lock expires and the job comes round again.
		x.log.Error("malformed job message; leaving it to expire", "subject", msg.Subject(), "err", err)
		return
	}
	x.log = x.log.With("job", x.raw.ID, "instance", x.raw.Instance)
	meta, err := msg.Metadata()
	if err != nil {
		x.log.Error("job message without JetStream metadata; leaving it to expire", "err", err)
		return
	}
	x.delivery, x.enqueued = int(meta.NumDelivered), x.raw.EnqueuedAt
	if x.enqueued.IsZero() {
		x.enqueued = meta.Timestamp
	}
	x.lock = time.Duration(x.raw.LockDurationMs) * time.Millisecond
	if x.lock <= 0 {
		x.lock = jobs.DefaultLockDuration
	}
	x.lockUntil = received.Add(x.lock)
	x.log.Debug("job fetched", "node", x.raw.Node, "delivery", x.delivery, "lock", x.lock)

	if x.delivery > 1 && !x.checkIn(ctx) {
		return
	}

	jobCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stopExtending := x.extendWhileRunning(jobCtx, cancel)
	report := x.run(jobCtx)
	stopExtending()
	if jobCtx.Err() != nil {
		cause := context.Cause(jobCtx)
		if errors.Is(cause, ErrLockLost) {
			x.log.Warn("lock lost: result not reported; the job will be redelivered", "cause", cause)
		} else {
			x.log.Warn("job abandoned: result not reported; the job will be redelivered", "cause", cause)
		}
		return
	}
	x.report(ctx, report)
}

// checkIn asks the engine whether this redelivery is current; only then
// may it run.
func (x *execution) checkIn(ctx context.Context) bool {
	x.log.Debug("checking in", "delivery", x.delivery)
	v, err := x.converse(ctx, jobs.Report{Kind: jobs.CheckIn}, string(jobs.CheckIn), x.lockUntil)
	switch {
	case err != nil:
		x.log.Warn("check-in unanswered; leaving the job to expire", "delivery", x.delivery, "err", err)
		return false
	case !v.Accepted:
		x.log.Info("check-in refused; job dropped", "delivery", x.delivery, "reason", v.Reason)
		return false
	}
	x.log.Debug("checked in", "delivery", x.delivery)
	return true
}

// extendWhileRunning extends the lock every half lock until the returned
// stop is called. A refused or unanswered extend cancels ctx with
// ErrLockLost.
func (x *execution) extendWhileRunning(ctx context.Context, cancel context.CancelCauseFunc) (stop func()) {
	extCtx, stopExt := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		next := x.lockUntil.Add(-x.lock / 2)
		for n := 1; ; n++ {
			t := time.NewTimer(time.Until(next))
			select {
			case <-extCtx.Done():
				t.Stop()
				return
			case <-t.C:
			}
			sent := time.Now()
			v, err := x.converse(extCtx, jobs.Report{Kind: jobs.Extend, ExtendMs: x.lock.Milliseconds()}, fmt.Sprintf("%s:%d", jobs.Extend, n), x.lockUntil)
			switch {
			case extCtx.Err() != nil:
				return
			case err != nil:
				x.log.Warn("lock extension unanswered before the lock expired; cancelling the handler", "err", err)
				cancel(fmt.Errorf("%w: extend unanswered: %v", ErrLockLost, err))
				return
			case !v.Accepted:
				x.log.Warn("lock extension refused; cancelling the handler", "reason", v.Reason)
				cancel(fmt.Errorf("%w: %s", ErrLockLost, v.Reason))
				return
			}
			x.lockUntil = sent.Add(x.lock)
			next = sent.Add(x.lock / 2)
			x.log.Debug("lock extended", "extension", n, "until", x.lockUntil)
		}
	}()
	return func() { stopExt(); <-done }
}

// run executes the handler and decides the report. Under WorkerTrusted it
// runs the shipped policy: output mapping, fault classification and
// retries within the lock. It returns nil when ctx ended.
func (x *execution) run(ctx context.Context) *jobs.Report {
	p := x.raw.Policy
	var mapper jobs.ErrorMapper
	var retry jobs.RetryPolicy
	var policyErr error
	if p != nil {
		if mapper, policyErr = jobs.CompileRules(p.Rules); policyErr == nil {
			retry, policyErr = p.Retry.Policy(nil)
		}
		if policyErr != nil {
			x.log.Warn("cannot run the job's policy; the engine will", "err", policyErr)
		}
	}
	for attempt := 1; ; attempt++ {
		out, err := x.call(ctx, attempt)
		if ctx.Err() != nil {
			return nil
		}
		if err == nil {
			return x.completion(out)
		}
		if r := businessReport(err); r != nil {
			return r
		}
		if f, ok := errors.AsType[*Failure](err); ok {
			code, body := faultOf(f.Err)
			retries := f.Retries
			return &jobs.Report{Kind: jobs.Fail, Code: code, Body: body, Message: f.Err.Error(),
				Retries: &retries, RetryBackoffMs: f.Backoff.Milliseconds()}
		}
		code, body := faultOf(err)
		fail := &jobs.Report{Kind: jobs.Fail, Code: code, Body: body}
		if p == nil || policyErr != nil {
			fail.CannotRunPolicy = p != nil
			return fail
		}
		cls, cerr := mapper.Classify(jobs.Fault{Code: code, Body: body})
		if cerr != nil {
			x.log.Warn("error mapper failed; the fault is technical", "err", cerr)
		}
		switch cls.Kind {
		case jobs.BusinessError:
			return &jobs.Report{Kind: jobs.BpmnError, ErrorCode: cls.ErrorCode, Message: cls.Message}
		case jobs.BusinessStatus:
			return &jobs.Report{Kind: jobs.Status, Status: cls.Status}
		}
		// The budget is the job's, not this delivery's: each earlier
		// delivery spent an attempt (the engine counts it so at check-in).
		backoff, again := retry.Retry(x.delivery+attempt-1, err)
		if !again {
			fail.Message = fmt.Sprintf("no retries left after %d attempt(s) in delivery %d", attempt, x.delivery)
			fail.Attempts = attempt
			return fail
		}
		x.log.Info("technical fault; retrying within the lock", "attempt", attempt, "backoff", backoff, "err", err)
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
	}
}

// call runs the handler once on a fresh copy of the job, turning a panic
// into a technical fault.
func (x *execution) call(ctx context.Context, attempt int) (out map[string]any, err error) {
	// A handler may modify Input: the first attempt gets the job as
	// decoded, a retry decodes the original again.
	fresh := x.raw
	if attempt > 1 {
		if err := jobs.UnmarshalJob(x.msg.Data(), &fresh); err != nil {
			return nil, err
		}
	}
	job := &Job{
		ID: fresh.ID, Topic: fresh.Topic, Instance: fresh.Instance, ProcessID: fresh.ProcessID, Node: fresh.Node,
		Input: fresh.Input, Headers: fresh.Headers, Delivery: x.delivery, Attempt: x.delivery + attempt - 1,
		LockDuration: x.lock, EnqueuedAt: x.enqueued, DeliveredAt: x.received,
	}
	if job.Input == nil {
		job.Input = map[string]any{}
	}
	defer func() {
		if r := recover(); r != nil {
			x.log.Error("handler panicked", "panic", r, "stack", string(debug.Stack()))
			out, err = nil, fmt.Errorf("handler panicked: %v", r)
		}
	}()
	return x.h.fn(ctx, job)
}

// businessReport is the report of a BpmnError or Status outcome, nil for
// anything else. One without its code or value is a technical fault.
func businessReport(err error) *jobs.Report {
	if e, ok := errors.AsType[*BusinessError](err); ok && e.Code != "" {
		return &jobs.Report{Kind: jobs.BpmnError, ErrorCode: e.Code, Message: e.Message, Vars: e.Vars}
	}
	if s, ok := errors.AsType[*BusinessStatus](err); ok && s.Value != "" {
		return &jobs.Report{Kind: jobs.Status, Status: s.Value}
	}
	if v, ok := errors.AsType[*TaskVerdict](err); ok {
		return &jobs.Report{Kind: jobs.Complete, Result: &v.Result}
	}
	return nil
}

// completion is the report of a successful run. Under WorkerTrusted the
// worker applies the task's output mapping; if it cannot, it reports the
// raw output with CannotRunPolicy and the engine raises a data-flow
// incident without running the job again.
func (x *execution) completion(out map[string]any) *jobs.Report {
	if out == nil {
		out = map[string]any{}
	}
	if x.raw.Policy == nil {
		return &jobs.Report{Kind: jobs.Complete, Output: out}
	}
	m, err := jobs.CompileOutputs(x.raw.Policy.Outputs)
	var mapped map[string]any
	if err == nil {
		mapped, err = m.Apply(out)
	}
	if err != nil {
		x.log.Warn("output mapping failed; reporting the raw output for the engine to fail the task", "err", err)
		return &jobs.Report{Kind: jobs.Complete, Output: out, CannotRunPolicy: true}
	}
	return &jobs.Report{Kind: jobs.Complete, Output: mapped}
}

// report sends the outcome and logs the engine's verdict. An outcome that
// does not encode as JSON (a channel in the output, say) becomes a
// technical fault saying so.
func (x *execution) report(ctx context.Context, r *jobs.Report) {
	if _, err := jobs.AppendReport(make([]byte, 0, 256), r); err != nil {
		x.log.Error("the handler's outcome is not JSON; reporting a fault instead", "kind", r.Kind, "err", err)
		r = &jobs.Report{Kind: jobs.Fail, Body: fmt.Sprintf("the handler's %s outcome is not JSON: %v", r.Kind, err)}
	}
	attrs := []any{"kind", r.Kind, "delivery", x.delivery}
	// Keep trying while the lock holds, and for one verdict timeout at
	// least: until the engine delivers the job again, it takes the report.
	deadline := time.Now().Add(x.w.opts.VerdictTimeout)
	if x.lockUntil.After(deadline) {
		deadline = x.lockUntil
	}
	v, err := x.converse(ctx, *r, string(r.Kind), deadline)
	switch {
	case err != nil:
		x.log.Error("report unanswered until the lock expired; giving up (the job will be delivered again)", append(attrs, "err", err)...)
	case !v.Accepted:
		x.log.Warn("report refused", append(attrs, "reason", v.Reason)...)
	default:
		if v.Reason != "" {
			attrs = append(attrs, "reason", v.Reason)
		}
		x.log.Debug("job reported", attrs...)
	}
}
