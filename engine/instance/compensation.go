package instance

import (
	"cmp"
	"fmt"
	"reflect"
	"slices"

	"github.com/jetbpm/jetbpm/engine/model"
)

// Compensation (docs/compensation.md). Each successful completion of an
// activity that has a compensation handler appends a Completion to the
// instance's journal, with the variables the activity saw. A compensation
// throw takes the completions of its scope (or of one activity) out of the
// journal and runs their handlers newest first, one at a time, each in a
// scope of its own holding the snapshot; the thrower waits until the last
// ends. The operator's Compensate event does the same for the whole
// journal (or one node), after cancelling every token, then terminates
// the instance.

// Completion is one entry of the completion journal.
type Completion struct {
	// Seq orders completions: the instance's counter at the completion.
	Seq     uint64 `msgpack:"seq"`
	Node    string `msgpack:"node"`
	Handler string `msgpack:"handler"`
	// Scope is the scope the activity ran in (for an iteration of a
	// multi-instance activity: the scope of the activity itself).
	Scope     string `msgpack:"scope"`
	Iteration int    `msgpack:"iteration,omitempty"`
	// Via are the completed sub-processes without a handler of their own
	// that the completion moved out of, innermost first.
	Via []string `msgpack:"via,omitempty"`
	// Vars are the variables the activity saw at its completion.
	Vars map[string]any `msgpack:"vars,omitempty"`
	// Children, on a sub-process whose handler is a compensation event
	// sub-process, are its completed children: a throw in the event
	// sub-process compensates them.
	Children []*Completion `msgpack:"children,omitempty"`
}

// Compensation is a compensation in progress.
type Compensation struct {
	ID string `msgpack:"id"`
	// Track is the throw event's track that waits; "" for the operator's
	// compensation, which terminates the instance at its end.
	Track string `msgpack:"track,omitempty"`
	// Queue are the completions still to compensate, next first; Current
	// is the one whose handler runs, in scope Scope.
	Queue   []*Completion `msgpack:"queue,omitempty"`
	Current *Completion   `msgpack:"current,omitempty"`
	Scope   string        `msgpack:"scope,omitempty"`
}

// Compensable returns the completions of the journal that Compensate
// (the operator's) would compensate: all, or node's.
func (s *State) Compensable(node string) []*Completion {
	var out []*Completion
	for _, c := range s.Journal {
		if node == "" || c.Node == node || slices.Contains(c.Via, node) {
			out = append(out, c)
		}
	}
	return out
}

// journal records the completion of t at n when n has a compensation
// handler. extra are results not yet written (an iteration's).
func (r *runner) journal(t *Track, n *model.Node, locals, extra map[string]any) {
	h := r.p.CompensationHandler(n.ID)
	if h == nil {
		return
	}
	vars := r.visibleWith(t, locals)
	for k, v := range extra {
		vars[k] = v
	}
	c := &Completion{Seq: r.next(), Node: n.ID, Handler: h.ID, Scope: t.Scope, Vars: deepCopyMap(vars), Children: r.children}
	r.children = nil
	if t.Inner {
		sc := r.s.scope(t.Scope)
		c.Scope, c.Iteration = sc.Parent, sc.Iteration
	}
	r.s.Journal = append(r.s.Journal, c)
}

// journalScopeDone runs before scope sc of activity n is removed because
// n completed: with a handler of its own, n is compensated as a whole and
// the completions inside it are dropped — kept with n's own completion
// when the handler is a compensation event sub-process, which may
// compensate them; without one they move to the enclosing scope, where a
// throw still reaches them.
func (r *runner) journalScopeDone(sc *Scope, n *model.Node) {
	h := r.p.CompensationHandler(n.ID)
	keep := h != nil && h.TriggeredByEvent && sc.Iteration == 0
	r.s.Journal = slices.DeleteFunc(r.s.Journal, func(c *Completion) bool {
		if c.Scope != sc.ID {
			return false
		}
		if keep {
			r.children = append(r.children, c)
			return true
		}
		if h != nil {
			return true
		}
		c.Scope = sc.Parent
		if sc.Iteration == 0 || len(c.Via) == 0 || c.Via[len(c.Via)-1] != n.ID {
			c.Via = append(c.Via, n.ID)
		}
		return false
	})
}

// take removes the completions keep selects from the journal and returns
// them newest first.
func (r *runner) takeCompletions(keep func(*Completion) bool) []*Completion {
	var out []*Completion
	r.s.Journal = slices.DeleteFunc(r.s.Journal, func(c *Completion) bool {
		if keep(c) {
			out = append(out, c)
			return true
		}
		return false
	})
	slices.SortFunc(out, func(a, b *Completion) int { return cmp.Compare(b.Seq, a.Seq) })
	return out
}

// throwCompensation runs the handlers of the completions t's scope holds
// (of n.ActivityRef only, when set), then leaves n. In an event
// sub-process it compensates the scope the event sub-process belongs to.
func (r *runner) throwCompensation(t *Track, n *model.Node) {
	scope := t.Scope
	if sc := r.s.scope(scope); sc != nil && sc.Owner != "" {
		if o := r.s.track(sc.Owner); o != nil && r.p.Node(o.Node).TriggeredByEvent {
			scope = o.Scope
		}
	}
	entries := r.takeCompletions(func(c *Completion) bool {
		return c.Scope == scope && (n.ActivityRef == "" || c.Node == n.ActivityRef || slices.Contains(c.Via, n.ActivityRef))
	})
	if len(entries) == 0 {
		r.compensated(t, n)
		return
	}
	t.State = Waiting
	c := &Compensation{ID: fmt.Sprintf("c%d", r.next()), Track: t.ID, Queue: entries}
	r.s.Compensations = append(r.s.Compensations, c)
	r.nextHandler(c)
}

// compensated passes a throw's token on, or ends it at an end event; a
// cancel end event's leaves its transaction by the cancel boundary.
func (r *runner) compensated(t *Track, n *model.Node) {
	t.State = Ready
	if n.Event == model.CancelEvent {
		r.transactionCancelled(t)
		return
	}
	if n.Kind == model.EndEvent {
		if !r.listenFrom(t, n, model.ListenEnd, 0) { // its Zeebe end listeners first
			r.endTrack(t)
		}
		return
	}
	r.complete(t, n, nil, nil)
}

// operatorCompensate applies the operator's Compensate: every token is
// cancelled and the handlers of the journal (node's only, when set) run;
// the instance then ends terminated. Refused while a compensation runs or
// when there is nothing to compensate.
func (r *runner) operatorCompensate(node string) bool {
	if len(r.s.Compensations) > 0 || len(r.s.Compensable(node)) == 0 {
		return false
	}
	entries := r.takeCompletions(func(c *Completion) bool { return node == "" || c.Node == node || slices.Contains(c.Via, node) })
	r.cancelAll()
	c := &Compensation{ID: fmt.Sprintf("c%d", r.next()), Queue: entries}
	r.s.Compensations = append(r.s.Compensations, c)
	r.nextHandler(c)
	return true
}

// nextHandler starts the handler of c's next completion, or ends c.
func (r *runner) nextHandler(c *Compensation) {
	if len(c.Queue) == 0 {
		r.compensationDone(c)
		return
	}
	e := c.Queue[0]
	c.Queue, c.Current = c.Queue[1:], e
	parent := e.Scope
	if r.s.scope(parent) == nil {
		parent = RootScope
	}
	sc := &Scope{ID: fmt.Sprintf("s%d", r.next()), Parent: parent, Owner: c.Track, Vars: deepCopyMap(e.Vars), Compensation: c.ID}
	r.s.Scopes = append(r.s.Scopes, sc)
	c.Scope = sc.ID
	r.compensationFact(FactCompensationStarted, sc.ID, e, "")
	h := r.p.Node(e.Handler)
	if !h.TriggeredByEvent {
		r.spawn(h.ID, sc.ID, c.Track, "")
		return
	}
	// A compensation event sub-process runs as if triggered in the
	// sub-process's scope, restored from the snapshot: a throw in it
	// compensates the sub-process's completed children.
	for _, child := range e.Children {
		child.Scope = sc.ID
		r.s.Journal = append(r.s.Journal, child)
	}
	e.Children = nil
	owner := r.spawn(h.ID, sc.ID, c.Track, "")
	owner.State = Waiting
	inner := &Scope{ID: fmt.Sprintf("s%d", r.next()), Parent: sc.ID, Owner: owner.ID}
	r.s.Scopes = append(r.s.Scopes, inner)
	r.spawn(r.p.EventSubStart(h.ID).ID, inner.ID, owner.ID, "")
}

// handlerDone ends the handler run in scope sc (its last token ended: the
// handler completed, was resolved or abandoned) and starts the next.
func (r *runner) handlerDone(sc *Scope) {
	c := r.compensation(sc.Compensation)
	if c == nil || c.Current == nil {
		r.bug("handler scope %q has no running compensation %q", sc.ID, sc.Compensation)
	}
	// What the handler wrote (a variable it changed or added over the
	// snapshot) goes to the scope the compensated activity ran in.
	into := sc.Parent
	if r.s.scope(into) == nil {
		into = RootScope
	}
	for _, k := range sortedKeys(sc.Vars) {
		if old, ok := c.Current.Vars[k]; !ok || !reflect.DeepEqual(old, sc.Vars[k]) {
			r.storeVar(into, k, sc.Vars[k])
		}
	}
	r.removeScope(sc.ID)
	r.compensationFact(FactCompensationCompleted, sc.ID, c.Current, "")
	c.Current, c.Scope = nil, ""
	r.nextHandler(c)
}

// compensationDone ends c: its thrower goes on, or the operator's
// compensation terminates the instance.
func (r *runner) compensationDone(c *Compensation) {
	r.dropCompensation(c.ID)
	if c.Track == "" {
		r.finish(Terminated, nil, "compensated by the operator")
		return
	}
	t := r.s.track(c.Track)
	if t == nil {
		r.bug("compensation %q has no thrower %q", c.ID, c.Track)
	}
	r.compensated(t, r.p.Node(t.Node))
}

func (r *runner) compensation(id string) *Compensation {
	for _, c := range r.s.Compensations {
		if c.ID == id {
			return c
		}
	}
	return nil
}

func (r *runner) dropCompensation(id string) {
	r.s.Compensations = slices.DeleteFunc(r.s.Compensations, func(c *Compensation) bool { return c.ID == id })
}

// cancelCompensation cancels the handler running in scope sc (its
// thrower was cancelled, or the instance): the remaining handlers do not run.
func (r *runner) cancelCompensation(sc *Scope) {
	for _, t := range r.tracksIn(sc.ID) {
		r.cancelTrack(t)
	}
	r.removeScope(sc.ID)
	r.dropCompensation(sc.Compensation)
}

func (r *runner) compensationFact(kind FactKind, run string, e *Completion, errText string) {
	f := &Fact{
		ID: r.s.ID + "." + string(kind) + "." + run, Kind: kind, Instance: r.s.ID,
		ProcessID: r.s.ProcessID, Version: r.s.Version, Time: r.env.Now, Error: errText,
		Node: e.Handler, Activity: e.Node,
	}
	r.s.Outbox = append(r.s.Outbox, Effect{ID: "fact:" + f.ID, Kind: PublishFact, Fact: f})
}
