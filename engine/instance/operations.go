package instance

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jetbpm/jetbpm/engine/model"
	"github.com/jetbpm/jetbpm/incidents"
)

// An in-process service task does not run its operation inside the step:
// the step parks the task on an operation wait and asks the engine, with a
// RunOperation effect, to run the operation beside it; the result comes
// back as an OperationDone event (docs/engine.md §3.1). So a slow
// operation holds up its own instance only, and its deadline holds even
// when it ignores its context.

// Executor runs in-process operations. The engine resolves Call.Operation
// to a registered function; tests pass their own.
type Executor interface {
	Execute(ctx context.Context, call Call) (map[string]any, error)
}

// Call is one invocation of an in-process operation. Operations run
// at-least-once: after a crash an operation may run again.
type Call struct {
	InstanceID string `msgpack:"instance"`
	Node       string `msgpack:"node"`
	Operation  string `msgpack:"operation"`
	// Activation is unique per visit of the node; with InstanceID and Node it
	// is an idempotency key for the operation.
	Activation uint64         `msgpack:"activation"`
	Input      map[string]any `msgpack:"input,omitempty"`
}

// BpmnError is the error an operation returns to throw a BPMN error, which
// an error boundary event can catch.
type BpmnError struct {
	Code    string
	Message string
}

func (e *BpmnError) Error() string {
	if e.Message == "" {
		return "bpmn error " + e.Code
	}
	return "bpmn error " + e.Code + ": " + e.Message
}

// ResultKind says how an operation ended.
type ResultKind string

// Result kinds.
const (
	// OperationCompleted: the operation returned OperationResult.Output.
	OperationCompleted ResultKind = "completed"
	// OperationThrew: it returned a *BpmnError (Code, Message).
	OperationThrew ResultKind = "bpmnError"
	// OperationFailed: a technical failure — an error, a panic, an output
	// that cannot be stored; Message says which.
	OperationFailed ResultKind = "failed"
	// OperationTimedOut: its deadline passed before it returned.
	OperationTimedOut ResultKind = "timedOut"
)

// OperationResult is how an in-process operation ended, as the engine
// reports it to the instance (Event.Result).
type OperationResult struct {
	Kind   ResultKind     `msgpack:"kind"`
	Output map[string]any `msgpack:"output,omitempty"`
	// Code is the BPMN error's code; Message the BPMN error's message, or
	// the whole description of a technical failure.
	Code    string `msgpack:"code,omitempty"`
	Message string `msgpack:"message,omitempty"`
}

// Invoke runs call with exec and returns its result as the step applies
// it: the output normalized (NormalizeVars), a *BpmnError anywhere in the
// error chain as a thrown error, a panic or any other error as a technical
// failure, and the context's deadline as a timeout. It returns when the
// operation does; the engine runs it on a goroutine of its own.
func Invoke(ctx context.Context, exec Executor, call Call) (res *OperationResult) {
	defer func() {
		if v := recover(); v != nil {
			res = &OperationResult{Kind: OperationFailed, Message: fmt.Sprintf("operation %q failed: panic: %v", call.Operation, v)}
		}
	}()
	out, err := exec.Execute(ctx, call)
	var be *BpmnError
	switch {
	case err == nil:
	case errors.As(err, &be):
		return &OperationResult{Kind: OperationThrew, Code: be.Code, Message: be.Message}
	case errors.Is(err, context.DeadlineExceeded) && errors.Is(ctx.Err(), context.DeadlineExceeded):
		return &OperationResult{Kind: OperationTimedOut}
	default:
		return &OperationResult{Kind: OperationFailed, Message: fmt.Sprintf("operation %q failed: %v", call.Operation, err)}
	}
	clean, err := NormalizeVars(out)
	if err != nil {
		return &OperationResult{Kind: OperationFailed, Message: fmt.Sprintf("operation %q returned %v", call.Operation, err)}
	}
	return &OperationResult{Kind: OperationCompleted, Output: clean}
}

// OperationEvent is the event that reports result for the operation wait
// wait.
func OperationEvent(wait string, result *OperationResult) Event {
	return Event{ID: "op:" + wait, Kind: OperationDone, Wait: wait, Result: result}
}

// service enters a service task: an external one queues a job, an
// in-process one parks on an operation wait whose deadline is the task's
// timeout (else the engine's default) and asks the engine to run it.
func (r *runner) service(t *Track, n *model.Node) {
	if n.IsExternal() {
		r.enqueue(t, n)
		return
	}
	locals, input := r.taskInput(t, n)
	timeout := n.Service.Timeout
	if timeout == 0 {
		timeout = r.env.DefaultTimeout
	}
	w := &Wait{ID: r.waitID(n.ID, t.Activation), Kind: OperationWait, Track: t.ID, Node: n.ID, Armed: r.env.Now}
	t.State, t.Locals = Waiting, locals
	r.s.Waits = append(r.s.Waits, w)
	if timeout > 0 {
		w.Due = r.env.Now.Add(timeout)
	}
	call := &Call{InstanceID: r.s.ID, Node: n.ID, Operation: n.Service.Operation, Activation: t.Activation, Input: deepCopyMap(input)}
	if r.env.Inline != nil {
		if res, ok := r.env.Inline(*call, w.Due); ok {
			// Run inside the step: nothing parks, the result applies now.
			r.operationDone(w, res)
			return
		}
	}
	if !w.Due.IsZero() {
		r.watchOperations(w.Due)
	}
	r.s.Outbox = append(r.s.Outbox, Effect{ID: "op:" + w.ID, Kind: RunOperation, Wait: w.ID, Due: w.Due, Call: call})
	r.armBoundaries(t, n)
}

// The deadlines of an instance's operations are kept by one durable timer,
// the operation watch, not one per operation: a timer is a stored message
// schedule, and one per operation (armed, then purged a few milliseconds
// later) would cost more than the operation itself. The watch is due no
// later than the earliest deadline of the operations waiting; it is not
// moved when an operation ends, only when an earlier deadline comes, and
// it is dropped when it fires with no operation left or the instance
// ends. It decides only when the engine's own report of a timeout never
// comes (the node running the operation died).

// watchID names the instance's operation watch.
func (r *runner) watchID() string { return r.s.ID + "/operations" }

// watchOperations makes the operation watch due at or before due.
func (r *runner) watchOperations(due time.Time) {
	w := r.s.wait(r.watchID())
	switch {
	case w == nil:
		r.arm(&Wait{ID: r.watchID(), Kind: OperationWatch, Due: due, Armed: r.env.Now})
	case due.Before(w.Due):
		// Scheduled again on its subject, the timer replaces the later one;
		// a firing of that one already under way is refused by number.
		r.dropScheduled(w.ID)
		w.Due, w.Armed, w.Firing = due, r.env.Now, w.Firing+1
		r.schedule(w)
	}
}

// watchFired times out every operation whose deadline has passed and
// sets the watch for the next deadline, if an operation is left.
func (r *runner) watchFired(w *Wait) {
	r.s.Waits = slices.DeleteFunc(r.s.Waits, func(x *Wait) bool { return x == w })
	var due []string
	var next time.Time
	for _, o := range r.s.Waits {
		switch {
		case o.Kind != OperationWait || o.Due.IsZero():
		case !o.Due.After(r.env.Now):
			due = append(due, o.ID)
		case next.IsZero() || o.Due.Before(next):
			next = o.Due
		}
	}
	for _, id := range due {
		if o := r.s.wait(id); o != nil { // timing one out may have ended another
			r.unschedule(o)
			t, n := r.wake(o)
			r.operationTimedOut(t, n, o)
		}
	}
	if !next.IsZero() && r.s.wait(w.ID) == nil && !r.s.Status.Finished() {
		r.arm(&Wait{ID: w.ID, Kind: OperationWatch, Due: next, Armed: r.env.Now, Firing: w.Firing + 1})
	}
}

// dropWatch removes the operation watch of an instance that has ended.
func (r *runner) dropWatch() {
	if w := r.s.wait(r.watchID()); w != nil {
		r.s.Waits = slices.DeleteFunc(r.s.Waits, func(x *Wait) bool { return x == w })
		r.unschedule(w)
	}
}

// dropScheduled takes back a timer for wait scheduled in this same step.
func (r *runner) dropScheduled(wait string) {
	mine := slices.DeleteFunc(r.s.Outbox[r.outboxBase:], func(e Effect) bool { return e.Kind == ScheduleTimer && e.Wait == wait })
	r.s.Outbox = r.s.Outbox[:r.outboxBase+len(mine)]
}

// operationDone applies an operation's result to its task: the track
// wakes once.
func (r *runner) operationDone(w *Wait, res *OperationResult) {
	t, n := r.wake(w)
	switch res.Kind {
	case OperationCompleted:
		out, err := NormalizeVars(res.Output)
		if err != nil {
			r.fault(t, n, incidents.CauseOperation, fmt.Sprintf("operation %q returned %v", n.Service.Operation, err))
			return
		}
		r.complete(t, n, t.Locals, out)
	case OperationThrew:
		r.throw(t, n.ID, t.Scope, res.Code, res.Message)
	case OperationTimedOut:
		r.operationTimedOut(t, n, w)
	default:
		msg := res.Message
		if msg == "" {
			msg = fmt.Sprintf("operation %q failed", n.Service.Operation)
		}
		r.fault(t, n, incidents.CauseOperation, msg)
	}
}

// operationTimedOut faults a task whose operation outlived its deadline:
// its runner said so, or the operation watch found it overdue.
func (r *runner) operationTimedOut(t *Track, n *model.Node, w *Wait) {
	var after time.Duration
	if !w.Due.IsZero() {
		after = w.Due.Sub(w.Armed)
	}
	r.fault(t, n, incidents.CauseOperation, fmt.Sprintf("operation %q timed out after %v", n.Service.Operation, after))
}
