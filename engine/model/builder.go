package model

import (
	"fmt"
	"time"

	"github.com/jetbpm/jetbpm/jobs"
	"github.com/jetbpm/jetbpm/script"
)

// Builder constructs a Process. Methods add elements in order and return the
// builder so short processes read as one statement; Build validates the
// whole. A Builder returned by SubProcess adds to the same process, inside
// the sub-process.
type Builder struct {
	p     *Process
	scope string
	flows *int // shared counter for generated flow ids
}

// NewBuilder starts a process with the given id.
func NewBuilder(id string) *Builder {
	return &Builder{p: &Process{ID: id}, flows: new(int)}
}

// Name sets the process's display name.
func (b *Builder) Name(name string) *Builder {
	b.p.Name = name
	return b
}

// Build validates the process and returns it.
func (b *Builder) Build() (*Process, error) {
	if err := b.p.Validate(); err != nil {
		return nil, err
	}
	return b.p, nil
}

func (b *Builder) add(n *Node) *Node {
	n.Scope = b.scope
	b.p.Nodes = append(b.p.Nodes, n)
	return n
}

// NodeOption configures a node as it is added. Options that do not apply to a
// node's kind are reported by Build.
type NodeOption func(*Node)

// Named sets a node's display name.
func Named(name string) NodeOption { return func(n *Node) { n.Name = name } }

// Input adds an input mapping: variable target of the activity's local scope
// gets the value of the expression source.
func Input(target, source string) NodeOption {
	return func(n *Node) { n.Inputs = append(n.Inputs, Mapping{Target: target, Source: source}) }
}

// Output adds an output mapping: after the activity completes, variable
// target gets the value of source, evaluated over the activity's results.
func Output(target, source string) NodeOption {
	return func(n *Node) { n.Outputs = append(n.Outputs, Mapping{Target: target, Source: source}) }
}

// InputJavaScript and OutputJavaScript add a mapping whose source is a
// JavaScript program (a Camunda 7 camunda:script parameter).
func InputJavaScript(target, program string) NodeOption {
	return func(n *Node) {
		n.Inputs = append(n.Inputs, Mapping{Target: target, Source: program, Language: script.Language})
	}
}

func OutputJavaScript(target, program string) NodeOption {
	return func(n *Node) {
		n.Outputs = append(n.Outputs, Mapping{Target: target, Source: program, Language: script.Language})
	}
}

// Timeout bounds an in-process operation: past d its context is
// cancelled and the task fails.
func Timeout(d time.Duration) NodeOption {
	return func(n *Node) {
		if n.Service == nil {
			n.Service = &Service{}
		}
		n.Service.Timeout = d
	}
}

func (b *Builder) node(id string, kind Kind, ev EventType, opts []NodeOption) *Builder {
	n := b.add(&Node{ID: id, Kind: kind, Event: ev})
	for _, o := range opts {
		o(n)
	}
	return b
}

// StartEvent adds a none start event.
func (b *Builder) StartEvent(id string, opts ...NodeOption) *Builder {
	return b.node(id, StartEvent, NoneEvent, opts)
}

// EndEvent adds a none end event: the token ends here.
func (b *Builder) EndEvent(id string, opts ...NodeOption) *Builder {
	return b.node(id, EndEvent, NoneEvent, opts)
}

// ErrorEndEvent adds an end event that throws a BPMN error with code.
func (b *Builder) ErrorEndEvent(id, code string, opts ...NodeOption) *Builder {
	return b.node(id, EndEvent, ErrorEvent, append([]NodeOption{func(n *Node) { n.ErrorCode = code }}, opts...))
}

// TerminateEndEvent adds an end event that ends every token of its scope.
func (b *Builder) TerminateEndEvent(id string, opts ...NodeOption) *Builder {
	return b.node(id, EndEvent, TerminateEvent, opts)
}

// Task adds a task that completes as soon as it is reached.
func (b *Builder) Task(id string, opts ...NodeOption) *Builder {
	return b.node(id, Task, NoneEvent, opts)
}

// ManualTask adds a manual task; the engine completes it at once.
func (b *Builder) ManualTask(id string, opts ...NodeOption) *Builder {
	return b.node(id, ManualTask, NoneEvent, opts)
}

// JavaScript makes a script task's script a JavaScript program
// (Script.Language).
func JavaScript() NodeOption {
	return func(n *Node) {
		if n.Script != nil {
			n.Script.Language = script.Language
		}
	}
}

// ScriptTask adds a task that writes the value of expr to resultVariable.
func (b *Builder) ScriptTask(id, expr, resultVariable string, opts ...NodeOption) *Builder {
	return b.node(id, ScriptTask, NoneEvent, append([]NodeOption{func(n *Node) {
		n.Script = &Script{Expression: expr, ResultVariable: resultVariable}
	}}, opts...))
}

// ServiceTask adds a service task running the in-process operation
// registered under the given name.
func (b *Builder) ServiceTask(id, operation string, opts ...NodeOption) *Builder {
	return b.node(id, ServiceTask, NoneEvent, append([]NodeOption{func(n *Node) {
		if n.Service == nil {
			n.Service = &Service{}
		}
		n.Service.Operation = operation
	}}, opts...))
}

// ExclusiveGateway adds a gateway that takes the first outgoing flow whose
// condition holds, else its default flow.
func (b *Builder) ExclusiveGateway(id string, opts ...NodeOption) *Builder {
	return b.node(id, ExclusiveGateway, NoneEvent, opts)
}

// ParallelGateway adds a gateway that forks to every outgoing flow and joins
// one token from every incoming flow.
func (b *Builder) ParallelGateway(id string, opts ...NodeOption) *Builder {
	return b.node(id, ParallelGateway, NoneEvent, opts)
}

// TimerCatchEvent adds an intermediate event that waits for a timer.
func (b *Builder) TimerCatchEvent(id string, t Timer, opts ...NodeOption) *Builder {
	return b.node(id, IntermediateCatchEvent, TimerEvent, append([]NodeOption{func(n *Node) { n.Timer = &t }}, opts...))
}

// ErrorBoundary attaches an interrupting error boundary event to activity;
// it catches BPMN errors with code, or every error when code is "".
func (b *Builder) ErrorBoundary(id, activity, code string, opts ...NodeOption) *Builder {
	return b.node(id, BoundaryEvent, ErrorEvent, append([]NodeOption{func(n *Node) {
		n.AttachedTo, n.ErrorCode, n.Interrupting = activity, code, true
	}}, opts...))
}

// TimerBoundary attaches a timer boundary event to activity. An interrupting
// timer cancels the activity when it fires; a non-interrupting one starts a
// parallel token and leaves the activity running.
func (b *Builder) TimerBoundary(id, activity string, t Timer, interrupting bool, opts ...NodeOption) *Builder {
	return b.node(id, BoundaryEvent, TimerEvent, append([]NodeOption{func(n *Node) {
		n.AttachedTo, n.Timer, n.Interrupting = activity, &t, interrupting
	}}, opts...))
}

// SubProcess adds an embedded sub-process, a scope of its own, and returns a
// builder for its contents. The sub-process needs a none start event inside.
func (b *Builder) SubProcess(id string, opts ...NodeOption) *Builder {
	b.node(id, SubProcess, NoneEvent, opts)
	return &Builder{p: b.p, scope: id, flows: b.flows}
}

// FlowOption configures a sequence flow.
type FlowOption func(*Flow)

// When makes the flow conditional.
func When(condition string) FlowOption { return func(f *Flow) { f.Condition = condition } }

// WhenJavaScript makes the flow conditional on a JavaScript condition.
func WhenJavaScript(condition string) FlowOption {
	return func(f *Flow) { f.Condition, f.Language = condition, script.Language }
}

// FlowID sets the flow's id instead of a generated one.
func FlowID(id string) FlowOption { return func(f *Flow) { f.ID = id } }

// Flow adds a sequence flow from source to target.
func (b *Builder) Flow(source, target string, opts ...FlowOption) *Builder {
	b.addFlow(source, target, opts)
	return b
}

func (b *Builder) addFlow(source, target string, opts []FlowOption) *Flow {
	*b.flows++
	f := &Flow{ID: fmt.Sprintf("flow_%d", *b.flows), Source: source, Target: target}
	for _, o := range opts {
		o(f)
	}
	b.p.Flows = append(b.p.Flows, f)
	return f
}

// DefaultFlow adds a flow from source to target and makes it source's
// default flow.
func (b *Builder) DefaultFlow(source, target string, opts ...FlowOption) *Builder {
	f := b.addFlow(source, target, opts)
	for _, n := range b.p.Nodes {
		if n.ID == source {
			n.Default = f.ID
		}
	}
	return b
}

// Sequence adds flows between each pair of consecutive nodes.
func (b *Builder) Sequence(ids ...string) *Builder {
	for i := 1; i < len(ids); i++ {
		b.Flow(ids[i-1], ids[i])
	}
	return b
}

// Duration makes a timer firing an ISO-8601 duration after it is armed.
func Duration(iso string) Timer { return Timer{Type: TimerDuration, Value: iso} }

// Date makes a timer firing at an ISO-8601 date-time.
func Date(iso string) Timer { return Timer{Type: TimerDate, Value: iso} }

// Cycle makes a repeating timer, R[n]/duration.
func Cycle(iso string) Timer { return Timer{Type: TimerCycle, Value: iso} }

// TimerExpr is a timer of type typ whose value expr gives when the timer
// is armed (Timer.Expr): TimerExpr(TimerDuration, "reminderDelay").
func TimerExpr(typ TimerType, expr string) Timer { return Timer{Type: typ, Expr: expr} }

// WithIncidentRetry retries an incident on this activity automatically, per
// spec (its attempts count incident retries), before an operator is needed.
func WithIncidentRetry(spec jobs.RetrySpec) NodeOption {
	return func(n *Node) { n.IncidentRetry = &spec }
}

// CallActivity adds an activity that runs a child instance of processID
// (its latest version when the child starts; see CallVersion) and waits for
// it. Input and Output mappings shape what crosses the call.
func (b *Builder) CallActivity(id, processID string, opts ...NodeOption) *Builder {
	return b.node(id, CallActivity, NoneEvent, append([]NodeOption{func(n *Node) {
		if n.Call == nil {
			n.Call = &Call{}
		}
		n.Call.ProcessID = processID
	}}, opts...))
}

// CallVersion pins the version a call activity starts.
func CallVersion(v int) NodeOption {
	return func(n *Node) {
		if n.Call == nil {
			n.Call = &Call{}
		}
		n.Call.Version = v
	}
}
