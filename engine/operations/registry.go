// Package operations runs in-process service tasks: the registry of Go
// functions a user fills (Registry, re-exported by engine as Operations),
// the pool that runs them beside the partition loops and sends each result
// back to its instance as an event (Pool), and the hook that runs those
// registered inline inside their instance's step (Inline). See
// docs/engine.md §3.1 and §3.2.
//
// An operation runs at least once: the checkpoint that parks its task and
// the task's durable timeout, not this package, make that so. A pool that
// loses a run (a crash, a full queue, a result it cannot publish) leaves
// the timeout to decide.
package operations

import (
	"context"
	"fmt"
	"sync"

	"github.com/jetbpm/jetbpm/engine/instance"
)

// Operation is an in-process service task implementation. It receives the
// task's input variables and returns output variables. Return a *BpmnError
// (see ThrowError) to throw a BPMN error an error boundary can catch; any
// other error is a technical failure. Operations run at-least-once: use
// Call.Activation from CallInfo as an idempotency key when it matters.
//
// An operation registered with Register runs on a goroutine of the
// engine's operation pool, beside the partition loops; one registered with
// RegisterInline runs inside its instance's step. Either way its context
// ends at the task's deadline (or when the task is interrupted): honour it. One that does not is not
// waited for: the task times out at the deadline and whatever the
// operation returns later is discarded. Confine its effects to what it
// returns.
type Operation func(ctx context.Context, input map[string]any) (map[string]any, error)

// BpmnError is the error an operation returns to throw a BPMN error.
type BpmnError = instance.BpmnError

// ThrowError returns a BPMN error with the given code.
func ThrowError(code, message string) error { return &BpmnError{Code: code, Message: message} }

// Registry holds in-process operations by name. The zero
// value is empty and ready to use; it is safe for concurrent use.
type Registry struct {
	mu      sync.RWMutex
	ops     map[string]Operation
	inlined map[string]bool
}

// Register makes fn available under name, replacing any earlier one. It
// runs on the engine's operation pool, beside the partition loops.
func (o *Registry) Register(name string, fn Operation) {
	o.register(name, fn, false)
}

// RegisterInline makes fn available under name, to run inside the step of
// its instance, as a Camunda 7 delegate runs in its transaction: no
// parking, no extra checkpoint, and a chain of inline tasks costs one
// step. While it runs, the other instances of its partition wait, so
// register inline only fast, bounded code that does no I/O; the step waits
// for it until the task's deadline at most (docs/engine.md §3.2).
func (o *Registry) RegisterInline(name string, fn Operation) {
	o.register(name, fn, true)
}

func (o *Registry) register(name string, fn Operation, inline bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.ops == nil {
		o.ops, o.inlined = map[string]Operation{}, map[string]bool{}
	}
	o.ops[name] = fn
	if inline {
		o.inlined[name] = true
	} else {
		delete(o.inlined, name)
	}
}

// Has reports whether an operation is registered under name; a nil
// registry has none.
func (o *Registry) Has(name string) bool {
	if o == nil {
		return false
	}
	o.mu.RLock()
	defer o.mu.RUnlock()
	return o.ops[name] != nil
}

// Inline reports whether name runs inside the step.
func (o *Registry) Inline(name string) bool {
	o.mu.RLock()
	defer o.mu.RUnlock()
	return o.inlined[name]
}

// HasInline reports whether any operation runs inside the step.
func (o *Registry) HasInline() bool {
	o.mu.RLock()
	defer o.mu.RUnlock()
	return len(o.inlined) > 0
}

type callKey struct{}

// CallInfo returns the call an operation is serving: instance, node and
// activation identify one execution.
func CallInfo(ctx context.Context) (instance.Call, bool) {
	c, ok := ctx.Value(callKey{}).(instance.Call)
	return c, ok
}

// Execute implements instance.Executor.
func (o *Registry) Execute(ctx context.Context, call instance.Call) (map[string]any, error) {
	o.mu.RLock()
	fn := o.ops[call.Operation]
	o.mu.RUnlock()
	if fn == nil {
		return nil, fmt.Errorf("no operation registered under %q on this engine node", call.Operation)
	}
	info := call
	info.Input = nil
	return fn(context.WithValue(ctx, callKey{}, info), call.Input)
}
