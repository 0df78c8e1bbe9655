package engine

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
// An operation runs on a goroutine of the engine's operation pool, beside
// the partition loops, with a context that ends at the task's deadline (or
// when the task is interrupted): honour it. One that does not is not
// waited for: the task times out at the deadline and whatever the
// operation returns later is discarded. Confine its effects to what it
// returns.
type Operation func(ctx context.Context, input map[string]any) (map[string]any, error)

// BpmnError is the error an operation returns to throw a BPMN error.
type BpmnError = instance.BpmnError

// ThrowError returns a BPMN error with the given code.
func ThrowError(code, message string) error { return &BpmnError{Code: code, Message: message} }

// Operations is a registry of in-process operations by name. The zero
// value is empty and ready to use; it is safe for concurrent use.
type Operations struct {
	mu  sync.RWMutex
	ops map[string]Operation
}

// Register makes fn available under name, replacing any earlier one.
func (o *Operations) Register(name string, fn Operation) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.ops == nil {
		o.ops = map[string]Operation{}
	}
	o.ops[name] = fn
}

type callKey struct{}

// CallInfo returns the call an operation is serving: instance, node and
// activation identify one execution.
func CallInfo(ctx context.Context) (instance.Call, bool) {
	c, ok := ctx.Value(callKey{}).(instance.Call)
	return c, ok
}

// Execute implements instance.Executor.
func (o *Operations) Execute(ctx context.Context, call instance.Call) (map[string]any, error) {
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
