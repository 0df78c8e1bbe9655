// Package script runs the JavaScript of Camunda 7 models: script tasks,
// scripts in mappings, conditions and listeners
// (docs/scripts-listeners-connectors.md).
//
// Compile a script once, then run it as often as needed; each run gets a
// fresh ECMAScript runtime (github.com/dop251/goja) that holds nothing
// but what the run is given:
//
//	p, err := script.Compile("calc", `execution.setVariable("total", amount * 2); total > 100`)
//	...
//	res, err := p.Run(ctx, script.Env{Vars: vars}, script.Limits{})
//	// res.Value is the value of the last statement; res.Sets the variables
//	// the script set, in order.
//
// A script sees Camunda 7's facade: the variables by their names,
// `execution` (getVariable, setVariable, getVariables, hasVariable,
// setVariableLocal, getProcessInstanceId, getBusinessKey, getActivityId,
// getProcessDefinitionId, getId) and a small Spin-like `S(json)`. Nothing
// else of the world exists in the runtime: no file, network, process,
// timer or module access. A run stops at its time limit, its memory limit
// (approximate: see Limits) or a deep recursion, with an *Error that says
// which.
//
// The package imports nothing of the engine and nothing of NATS.
package script

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime/metrics"
	"strings"
	"sync"
	"time"

	"github.com/dop251/goja"
	"github.com/dop251/goja/parser"
)

// Language is the name jetbpm gives the scripts this package runs.
const Language = "javascript"

// IsJavaScript reports whether a BPMN scriptFormat or language attribute
// names JavaScript: javascript, js or ecmascript, in any case.
func IsJavaScript(format string) bool {
	switch strings.ToLower(strings.TrimSpace(format)) {
	case "javascript", "js", "ecmascript", "application/javascript", "text/javascript":
		return true
	}
	return false
}

// A Program is a compiled script. It is immutable: one Program runs in
// any number of goroutines at once.
type Program struct {
	name   string
	source string
	prog   *goja.Program
}

// Compile parses source as a script named name (the element it belongs
// to, say). A syntax error is an *Error with the line and column.
func Compile(name, source string) (*Program, error) {
	ast, err := parser.ParseFile(nil, name, source, 0)
	if err != nil {
		e := &Error{Script: name, Message: "SyntaxError: " + err.Error()}
		var list parser.ErrorList
		if errors.As(err, &list) && len(list) > 0 {
			e.Line, e.Column = list[0].Position.Line, list[0].Position.Column
			e.Message = "SyntaxError: " + list[0].Message
			if len(list) > 1 {
				e.Message += fmt.Sprintf(" (and %d more)", len(list)-1)
			}
		}
		return nil, e
	}
	prog, err := goja.CompileAST(ast, false)
	if err != nil {
		return nil, &Error{Script: name, Message: err.Error()}
	}
	return &Program{name: name, source: source, prog: prog}, nil
}

// Name returns the name the script was compiled with; Source its text.
func (p *Program) Name() string   { return p.name }
func (p *Program) Source() string { return p.source }

// Env is what a run sees.
type Env struct {
	// Vars are the variables the element sees, by name: bound as globals
	// (when the name is an identifier) and read by execution.getVariable.
	// A run never changes them; what the script sets is in Result.Sets.
	Vars map[string]any
	// Execution names the instance, element and token for the facade.
	Execution Execution
	// Task, for a task listener, is the user task the script sees as
	// `task` (task.go); nil binds no task.
	Task *Task
}

// Execution is what `execution.get...()` answers.
type Execution struct {
	ProcessInstanceID   string
	BusinessKey         string
	ActivityID          string
	ProcessDefinitionID string
	ID                  string
}

// Limits bound a run; a zero field takes its default.
type Limits struct {
	// Timeout is the run's time; default DefaultTimeout.
	Timeout time.Duration
	// Memory bounds what the process allocates while the run lasts, in
	// bytes; default DefaultMemory. goja has no allocator per runtime, so
	// this is the process-wide allocation counter, sampled every few
	// milliseconds: a run may be stopped a little early while other
	// goroutines allocate too, never much late.
	Memory uint64
	// StackDepth bounds the call depth; default DefaultStackDepth.
	StackDepth int
}

// Defaults of Limits.
const (
	DefaultTimeout    = time.Second
	DefaultMemory     = 64 << 20
	DefaultStackDepth = 1000
)

func (l Limits) withDefaults() Limits {
	if l.Timeout <= 0 {
		l.Timeout = DefaultTimeout
	}
	if l.Memory == 0 {
		l.Memory = DefaultMemory
	}
	if l.StackDepth <= 0 {
		l.StackDepth = DefaultStackDepth
	}
	return l
}

// Result is what a run gave.
type Result struct {
	// Value is the value of the script's last statement: nil for
	// undefined or null.
	Value any
	// Sets are the variables the script set, in the order it set them.
	Sets []Set
	// Task is Env.Task as the script left it (a copy; nil without one).
	Task *Task
}

// Set is one execution.setVariable (or setVariableLocal) call.
type Set struct {
	Name  string
	Value any
	Local bool
}

// Error is a script that failed: it does not compile, it threw, or it
// ran over a limit (Limit names which: "time", "memory", "stack").
type Error struct {
	Script       string
	Line, Column int
	Message      string
	Limit        string
}

func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "script %q", e.Script)
	if e.Line > 0 {
		fmt.Fprintf(&b, " line %d:%d", e.Line, e.Column)
	}
	b.WriteString(": ")
	b.WriteString(e.Message)
	return b.String()
}

// limitHit is what the watchdog interrupts a run with.
type limitHit struct{ limit, message string }

// tick is how often a run's watchdog looks at its time and memory.
const tick = 10 * time.Millisecond

// Run runs the script with env within lim. It never panics: a fault in
// the runtime is an *Error too.
func (p *Program) Run(ctx context.Context, env Env, lim Limits) (res Result, err error) {
	lim = lim.withDefaults()
	vm := goja.New()
	vm.SetMaxCallStackSize(lim.StackDepth)
	defer func() {
		if r := recover(); r != nil {
			res, err = Result{}, &Error{Script: p.name, Message: fmt.Sprintf("the script engine failed: %v", r)}
		}
	}()
	f := newFacade(vm, env)
	if err := f.bind(); err != nil {
		return Result{}, &Error{Script: p.name, Message: err.Error()}
	}

	stop := p.watch(ctx, vm, lim)
	v, runErr := vm.RunProgram(p.prog)
	stop()
	if runErr != nil {
		return Result{}, p.failure(runErr, lim)
	}
	value, err := export(v)
	if err != nil {
		return Result{}, &Error{Script: p.name, Message: "its value: " + err.Error()}
	}
	return Result{Value: value, Sets: f.sets, Task: f.task}, nil
}

// watch interrupts vm when the run passes its time or memory limit, or
// ctx ends; the returned func stops watching. A run shorter than a tick
// costs one timer.
func (p *Program) watch(ctx context.Context, vm *goja.Runtime, lim Limits) (stop func()) {
	start := time.Now()
	startAlloc := allocated()
	var (
		mu      sync.Mutex
		stopped bool
		t       *time.Timer
	)
	check := func() {
		mu.Lock()
		defer mu.Unlock()
		if stopped {
			return
		}
		switch {
		case ctx.Err() != nil:
			vm.Interrupt(limitHit{"", "stopped: " + ctx.Err().Error()})
		case time.Since(start) >= lim.Timeout:
			vm.Interrupt(limitHit{"time", fmt.Sprintf("ran over its %s time limit", lim.Timeout)})
		case allocated()-startAlloc > lim.Memory:
			vm.Interrupt(limitHit{"memory", fmt.Sprintf("allocated over its %d MiB memory limit", lim.Memory>>20)})
		default:
			t.Reset(min(tick, lim.Timeout))
		}
	}
	mu.Lock()
	t = time.AfterFunc(min(tick, lim.Timeout), check)
	mu.Unlock()
	return func() {
		mu.Lock()
		defer mu.Unlock()
		stopped = true
		t.Stop()
	}
}

// failure turns an error of the runtime into an *Error.
func (p *Program) failure(err error, lim Limits) *Error {
	e := &Error{Script: p.name}
	var interrupted *goja.InterruptedError
	var exc *goja.Exception
	var overflow *goja.StackOverflowError
	switch {
	case errors.As(err, &interrupted):
		if hit, ok := interrupted.Value().(limitHit); ok {
			e.Limit, e.Message = hit.limit, hit.message
		} else {
			e.Message = "interrupted"
		}
	case errors.As(err, &overflow):
		e.Limit, e.Message = "stack", fmt.Sprintf("went deeper than %d calls", lim.StackDepth)
	case errors.As(err, &exc):
		e.Message = exc.Value().String()
		if st := exc.Stack(); len(st) > 0 {
			pos := st[0].Position()
			e.Line, e.Column = pos.Line, pos.Column
		}
		if strings.Contains(e.Message, "Maximum call stack size exceeded") {
			e.Limit = "stack"
		}
	default:
		e.Message = err.Error()
	}
	return e
}

// allocated returns the bytes the process allocated on the heap so far.
func allocated() uint64 {
	sample := [1]metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(sample[:])
	if sample[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return sample[0].Value.Uint64()
}

// export turns a script value into the engine's kind of value: nil,
// bool, string, int64 (a whole number within ±2^53), float64, []any and
// map[string]any. Functions and symbols are refused.
func export(v goja.Value) (any, error) {
	if v == nil || goja.IsUndefined(v) || goja.IsNull(v) {
		return nil, nil
	}
	if o, ok := v.(*goja.Object); ok && o.Get("__spin") != nil {
		if fn, ok := goja.AssertFunction(o.Get("value")); ok {
			inner, err := fn(o)
			if err != nil {
				return nil, err
			}
			return normalize(inner.Export(), 0)
		}
	}
	return normalize(v.Export(), 0)
}

const maxDepth = 64

func normalize(x any, depth int) (any, error) {
	if depth > maxDepth {
		return nil, fmt.Errorf("nested deeper than %d levels (a cycle?)", maxDepth)
	}
	switch v := x.(type) {
	case nil, bool, string, int64:
		return v, nil
	case int:
		return int64(v), nil
	case float64:
		if v == math.Trunc(v) && math.Abs(v) <= 1<<53 {
			return int64(v), nil
		}
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("%v is not a number a variable can hold", v)
		}
		return v, nil
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			n, err := normalize(e, depth+1)
			if err != nil {
				return nil, err
			}
			out[i] = n
		}
		return out, nil
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			n, err := normalize(e, depth+1)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", k, err)
			}
			out[k] = n
		}
		return out, nil
	case time.Time:
		return v.UTC().Format(time.RFC3339Nano), nil
	default:
		return nil, fmt.Errorf("a %T cannot be a variable", x)
	}
}
