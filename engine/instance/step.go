package instance

import (
	"errors"
	"fmt"
	"maps"
	"time"

	"github.com/jetbpm/jetbpm/engine/model"
	"github.com/jetbpm/jetbpm/jobs"
	"github.com/jetbpm/jetbpm/script"
)

// Env is what a step may read besides the state: the process definition,
// the time, and the engine's settings.
type Env struct {
	Process *model.Process
	Now     time.Time
	// DefaultTimeout bounds in-process operations without a timeout of
	// their own; 0 = none.
	DefaultTimeout time.Duration
	// MaxNodes bounds node executions per step, so a loop without a wait
	// state fails the instance instead of spinning; 0 means 10,000.
	MaxNodes int
	// CheckValue, when set, vets every variable a step writes (size limits).
	CheckValue func(name string, v any) error
	// Jobs are the engine-wide job defaults, for all topics and per topic,
	// under every external task's own options.
	Jobs jobs.Defaults
	// IncidentRetry is the engine-wide incident retry policy under each
	// activity's own; the zero value retries nothing automatically.
	IncidentRetry jobs.RetrySpec
	// Discarded, when set, is told of each event the step skips because
	// it is a duplicate or its wait is gone (a late operation result, a
	// timer that fired after it was cancelled).
	Discarded func(Event)
	// Inline, when set, is offered each in-process operation the step
	// reaches, with its deadline (zero: none). If it runs the operation
	// (ok), the step applies the result at once instead of parking the
	// task; otherwise the task parks and asks for a RunOperation.
	Inline func(call Call, due time.Time) (res *OperationResult, ok bool)
	// Scripts bound each JavaScript run (zero fields: the script
	// package's defaults).
	Scripts script.Limits
}

var timeZero time.Time

// ErrInvariant marks a step that found the state inconsistent with its
// process (an engine bug or a corrupt checkpoint).
var ErrInvariant = errors.New("instance invariant violated")

// Start creates a new instance of env.Process with the given variables and
// runs it to its first wait state.
func Start(id string, env Env, vars map[string]any) (*State, error) {
	return StartFrom(id, env, vars, Begin{})
}

// StartChild creates the child instance a call activity asked for; it
// reports its end to parent.
func StartChild(id string, env Env, vars map[string]any, parent ParentRef) (*State, error) {
	return StartFrom(id, env, vars, Begin{Parent: &parent})
}

// Begin says how an instance starts; the zero value starts at the
// process's none start event.
type Begin struct {
	// Node is the start event to start at ("": the none start event).
	Node string
	// BusinessKey is stored on the instance (State.BusinessKey).
	BusinessKey string
	// Parent is the call activity a child instance reports to.
	Parent *ParentRef
	// Message is the message that starts the instance at a message start
	// event (Node); its variables are vars.
	Message *Correlation
}

// StartFrom creates a new instance of env.Process as b says, with the
// given variables, and runs it to its first wait state.
func StartFrom(id string, env Env, vars map[string]any, b Begin) (s *State, err error) {
	p := env.Process
	if p == nil || !p.Validated() {
		return nil, fmt.Errorf("instance %s: process is not validated", id)
	}
	start := p.StartOf("")
	if b.Node != "" {
		start = p.Node(b.Node)
		if start == nil || start.Kind != model.StartEvent || start.Scope != "" {
			return nil, fmt.Errorf("instance %s: %q is not a start event of process %s", id, b.Node, p.ID)
		}
	}
	if start == nil {
		return nil, fmt.Errorf("instance %s: process %s has no none start event", id, p.ID)
	}
	if b.Message != nil && start.Event != model.MessageEvent {
		return nil, fmt.Errorf("instance %s: a message starts the instance but %q is not a message start event", id, start.ID)
	}
	root, err := NormalizeVars(vars)
	if err != nil {
		return nil, fmt.Errorf("instance %s: %w", id, err)
	}
	var message map[string]any
	if b.Message != nil && len(start.Outputs) > 0 {
		// As at every message catch, the start event's output mappings
		// decide which of the message's variables the instance keeps.
		message, root = root, map[string]any{}
	}
	s = &State{
		ID: id, ProcessID: p.ID, Version: p.Version, Status: Active, StartedAt: env.Now,
		Scopes: []*Scope{{ID: RootScope, Vars: root}}, Parent: b.Parent,
		BusinessKey: b.BusinessKey, StartMessage: b.Message,
	}
	r := newRunner(s, env)
	defer r.recover(&err)
	r.fact(FactStarted, "")
	t := r.spawn(start.ID, RootScope, "", "")
	if message != nil {
		r.fire(t, start, message)
	}
	if err := r.openEventSubs(s.scope(RootScope), maps.Clone(s.Variables())); err != nil {
		r.fail(start.ID, "", err.Error())
	}
	r.run()
	s.Stuck = r.stuckJoins()
	return s, nil
}

// Apply applies events in order and runs the instance to its next wait
// state. It returns how many events changed the state; duplicates and
// events for waits that no longer exist are skipped. A finished instance
// takes no event, except that it rejects a Correlate it did not apply
// (RejectMessage), so the message can go to another subscription: the
// engine must step a finished instance for its Correlate events too. (A
// command on a task that ended in this same step is listed as refused on
// the task's final record, whether or not the instance ended with it.) An
// error means the state is unusable (ErrInvariant): the caller discards it.
func Apply(s *State, env Env, events ...Event) (applied int, err error) {
	if env.Process == nil || env.Process.ID != s.ProcessID || env.Process.Version != s.Version {
		return 0, fmt.Errorf("%w: instance %s runs %s v%d, step got another definition", ErrInvariant, s.ID, s.ProcessID, s.Version)
	}
	r := newRunner(s, env)
	defer r.recover(&err)
	for _, ev := range events {
		switch {
		case !s.Status.Finished() && r.apply(ev):
			applied++
		case s.Status.Finished() && ev.Kind == Correlate && r.correlate(ev):
			applied++ // rejected: the message goes to another subscription
		case s.Status.Finished() && ev.Kind == UserTaskCommand && ev.Task != nil && r.refuseEnded(ev):
			applied++ // its task ended in this step: refused on its final record
		case env.Discarded != nil:
			env.Discarded(ev)
		}
		r.run()
	}
	s.Stuck = r.stuckJoins()
	return applied, nil
}

// runner carries one step's working context.
type runner struct {
	s     *State
	env   Env
	p     *model.Process
	nodes int
	// outboxBase is where this step's effects start; earlier ones may have
	// been published and are never taken back.
	outboxBase int
	// fresh are the conditional waits opened and varEvents the variable
	// writes made since conditions last ran (conditional.go).
	fresh     []string
	varEvents []varEvent
	// children are the completions inside a sub-process that just
	// completed, for its own completion (compensation.go).
	children []*Completion
	// resumed is the task command whose listeners are done, being applied
	// now (tasklistenjobs.go).
	resumed string
}

func newRunner(s *State, env Env) *runner {
	if env.MaxNodes == 0 {
		env.MaxNodes = 10_000
	}
	return &runner{s: s, env: env, p: env.Process, outboxBase: len(s.Outbox)}
}

// invariant aborts the step; recover turns it into ErrInvariant.
type invariant struct{ msg string }

func (r *runner) bug(format string, args ...any) {
	panic(invariant{fmt.Sprintf(format, args...)})
}

func (r *runner) recover(err *error) {
	switch v := recover().(type) {
	case nil:
	case invariant:
		*err = fmt.Errorf("%w: instance %s: %s", ErrInvariant, r.s.ID, v.msg)
	default:
		*err = fmt.Errorf("%w: instance %s: panic: %v", ErrInvariant, r.s.ID, v)
	}
}

func (r *runner) next() uint64 {
	r.s.Seq++
	return r.s.Seq
}

func (r *runner) apply(ev Event) bool {
	switch ev.Kind {
	case TimerFired:
		w := r.s.wait(ev.Wait)
		if w == nil || w.Firing != ev.Firing || !w.Kind.Timer() {
			return false
		}
		r.timerFired(w)
		return true
	case OperationDone:
		w := r.s.wait(ev.Wait)
		if w == nil || w.Kind != OperationWait || ev.Result == nil {
			return false
		}
		r.operationDone(w, ev.Result)
		return true
	case JobOutcome:
		w := r.s.wait(ev.Wait)
		if w == nil || w.Kind != JobWait || ev.Outcome == nil {
			return false
		}
		r.jobDone(w, ev.Outcome)
		return true
	case IncidentRetry, IncidentResolve, IncidentAbandon:
		inc := r.s.incident(ev.Incident)
		if inc == nil {
			return false // unknown or already closed: refused by the caller
		}
		switch ev.Kind {
		case IncidentRetry:
			r.retryIncident(inc, ev.ID)
		case IncidentResolve:
			r.resolveIncident(inc, ev.ID, ev.Vars)
		default:
			r.abandonIncident(inc, ev.ID)
		}
		return true
	case ChildDone:
		w := r.s.wait(ev.Wait)
		if w == nil || w.Kind != ChildWait || ev.Child == nil || w.Child != ev.Child.Child {
			return false
		}
		if ev.Child.Escalation != nil {
			return r.childEscalated(w, ev.Child)
		}
		r.childDone(w, ev.Child)
		return true
	case Correlate:
		return r.correlate(ev)
	case MessageTo:
		return r.messageTo(ev)
	case UserTaskCommand:
		return r.taskCommand(ev)
	case SignalTo:
		return r.signalTo(ev)
	case Compensate:
		return r.operatorCompensate(ev.Node)
	case SetVars:
		return r.setVars(ev)
	case Trigger:
		return r.trigger(ev)
	case Rearm:
		return r.rearm(ev)
	case Cancel:
		reason := ev.Reason
		if reason == "" {
			reason = "cancelled"
		}
		r.cancelAll()
		r.finish(Terminated, nil, reason)
		return true
	default:
		return false
	}
}

// run executes ready tracks until every track waits or the instance ends.
func (r *runner) run() {
	r.nodes = 0
	for !r.s.Status.Finished() {
		// Conditional events see what the last node or event wrote
		// before anything else runs (docs/conditional-events.md §2).
		if r.conditions(); r.s.Status.Finished() {
			return
		}
		t := r.nextReady()
		if t == nil {
			// Nothing moves: an inclusive join that no token can reach
			// any more fires now, in this step (docs/gateways.md §1.3).
			if t = r.fireableJoin(); t == nil {
				return
			}
		}
		r.nodes++
		if r.nodes > r.env.MaxNodes {
			r.fail(t.Node, "", fmt.Sprintf("more than %d nodes executed without reaching a wait state (a loop without a wait?)", r.env.MaxNodes))
			return
		}
		r.execute(t)
	}
}

func (r *runner) nextReady() *Track {
	for _, t := range r.s.Tracks {
		if t.State == Ready || t.State == Entered {
			return t
		}
	}
	return nil
}

// spawn creates a ready track at node.
func (r *runner) spawn(node, scope, pred, flow string) *Track {
	if r.p.Node(node) == nil {
		r.bug("spawn at unknown node %q", node)
	}
	t := &Track{
		ID: fmt.Sprintf("t%d", r.next()), Node: node, Scope: scope, State: Ready,
		Flow: flow, Pred: pred, EnteredAt: r.env.Now,
	}
	t.Activation = r.s.Seq
	r.s.Tracks = append(r.s.Tracks, t)
	return t
}

// waitID names a wait (and the timer or job behind it) uniquely per
// activation, so re-entering a node never reuses one.
func (r *runner) waitID(node string, activation uint64) string {
	return fmt.Sprintf("%s/%s/%d", r.s.ID, node, activation)
}

func (r *runner) fact(kind FactKind, errText string) {
	f := &Fact{
		ID: r.s.ID + "." + string(kind), Kind: kind, Instance: r.s.ID,
		ProcessID: r.s.ProcessID, Version: r.s.Version, Time: r.env.Now, Error: errText,
	}
	r.s.Outbox = append(r.s.Outbox, Effect{ID: "fact:" + f.ID, Kind: PublishFact, Fact: f})
}
