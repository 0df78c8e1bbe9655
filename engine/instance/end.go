package instance

import (
	"fmt"
	"slices"
	"time"

	"github.com/jetbpm/jetbpm/engine/model"
	"github.com/jetbpm/jetbpm/incidents"
)

func (r *runner) end(t *Track, n *model.Node) {
	r.s.pass(n.ID)
	switch n.Event {
	case model.TerminateEvent:
		if !r.listenFrom(t, n, model.ListenEnd, 0) { // its Zeebe end listeners first
			r.terminate(t, n)
		}
	case model.MessageEvent:
		r.throwMessage(t, n)
	case model.EscalationEvent:
		r.throwEscalation(t, n)
	case model.SignalEvent:
		r.throwSignal(t, n)
	case model.CompensateEvent:
		r.throwCompensation(t, n)
	case model.CancelEvent:
		r.cancelTransaction(t, n)
	case model.ErrorEvent:
		r.throw(nil, n.ID, t.Scope, n.ErrorCode, n.ErrorMessage)
		if r.s.track(t.ID) != nil {
			r.endTrack(t)
		}
	default:
		if r.ended(t, n) && !r.listenFrom(t, n, model.ListenEnd, 0) {
			r.endTrack(t)
		}
	}
}

// endTrack removes a track that has finished and completes its scope when
// it was the scope's last.
func (r *runner) endTrack(t *Track) {
	n := r.p.Node(t.Node)
	if !r.completing(t, n) {
		return
	}
	if t.Scope == RootScope && len(r.s.Tracks) == 1 && r.listenAt(t, n, ListenerAt{Event: model.ListenEnd, Process: true}) {
		return // the process's end listeners run first
	}
	r.finishTrack(t)
}

// finishTrack removes track t, which has ended, and completes its scope
// when it was the scope's last.
func (r *runner) finishTrack(t *Track) {
	r.retrySucceeded(t)
	r.disarm(t)
	r.s.removeTrack(t.ID)
	r.scopeMaybeDone(t.Scope)
}

func (r *runner) scopeMaybeDone(scopeID string) {
	for _, t := range r.s.Tracks {
		if t.Scope == scopeID {
			return
		}
	}
	if scopeID == RootScope {
		r.finish(Completed, nil, "")
		return
	}
	sc := r.s.scope(scopeID)
	if sc == nil {
		r.bug("scope %q vanished", scopeID)
	}
	if sc.Compensation != "" {
		r.handlerDone(sc) // the handler ended
		return
	}
	if sc.Iteration > 0 {
		r.iterationDone(sc, nil) // its track was abandoned or terminated
		return
	}
	owner := r.s.track(sc.Owner)
	if owner == nil {
		r.bug("scope %q has no owner track %q", sc.ID, sc.Owner)
	}
	n := r.p.Node(owner.Node)
	locals := sc.Vars
	r.journalScopeDone(sc, n)
	r.removeScope(sc.ID)
	owner.State = Ready
	r.complete(owner, n, locals, nil)
	r.children = nil // not journaled: the sub-process did not complete
}

// terminateScope ends every track of a scope (a terminate end event) and
// completes the scope.
// terminate ends the scope of terminate end event n, reached by t. At
// the process's scope the other tokens are cancelled first and the
// process's Zeebe end listeners run on t, as at any end of the instance.
func (r *runner) terminate(t *Track, n *model.Node) {
	if t.Scope == RootScope && slices.ContainsFunc(r.p.JobListeners, func(l model.JobListener) bool { return l.Event == model.ListenEnd }) {
		for _, o := range r.tracksIn(RootScope) {
			if o != t {
				r.cancelTrack(o)
			}
		}
		if r.listenAt(t, n, ListenerAt{Event: model.ListenEnd, Process: true}) {
			return
		}
	}
	r.terminateScope(t.Scope)
}

func (r *runner) terminateScope(scopeID string) {
	for _, t := range r.tracksIn(scopeID) {
		r.cancelTrack(t)
	}
	r.scopeMaybeDone(scopeID)
}

func (r *runner) tracksIn(scopeID string) []*Track {
	var out []*Track
	for _, t := range r.s.Tracks {
		if t.Scope == scopeID {
			out = append(out, t)
		}
	}
	return out
}

// catchOutward walks from scope scopeID out to the process, offering a
// thrown error or escalation (kind, code) in each scope first to the
// scope's event sub-processes, then to the activity owning the scope
// (atOwner: its boundary events). It reports whether one caught it.
func (r *runner) catchOutward(scopeID string, kind model.EventType, code string, atOwner func(owner *Track) bool) bool {
	for {
		if s := r.eventSubCatcher(scopeID, kind, code); s != nil {
			r.triggerEventSub(scopeID, s, nil)
			return true
		}
		if scopeID == RootScope {
			return false
		}
		sc := r.s.scope(scopeID)
		if sc == nil {
			r.bug("%s thrown in unknown scope %q", kind, scopeID)
		}
		if sc.Compensation != "" {
			// A handler's scope: on to the scope it compensates in.
			scopeID = sc.Parent
			continue
		}
		owner := r.s.track(sc.Owner)
		if owner == nil {
			r.bug("scope %q has no owner track %q", sc.ID, sc.Owner)
		}
		if atOwner(owner) {
			return true
		}
		scopeID = owner.Scope
	}
}

// throw raises a BPMN error from thrower (an activity's track; nil for an
// error end event) in scope. The nearest catcher takes it: an error
// boundary on the thrower, then for each scope outwards an error event
// sub-process of the scope, then an error boundary on the sub-process
// owning it; the scopes in between are cancelled. Uncaught, an activity's
// error raises an incident and an error end event fails the instance.
func (r *runner) throw(thrower *Track, from, scopeID, code, message string) {
	if thrower != nil && !thrower.Inner {
		// An iteration's error is caught on the multi-instance body: the
		// walk up from its iteration scope reaches it first.
		if b := r.catcher(thrower.Node, code); b != nil {
			r.interrupt(thrower, b)
			return
		}
	}
	caught := r.catchOutward(scopeID, model.ErrorEvent, code, func(owner *Track) bool {
		b := r.catcher(owner.Node, code)
		if b != nil {
			r.interrupt(owner, b)
		}
		return b != nil
	})
	if caught {
		return
	}
	msg := fmt.Sprintf("uncaught BPMN error %q", code)
	if message != "" {
		msg += ": " + message
	}
	if thrower != nil && r.s.Parent == nil {
		// An activity's uncaught error is usually a missing boundary: an
		// incident lets the model be fixed and the node retried.
		// In a child it fails the child with the code, for the caller.
		r.raise(thrower, r.p.Node(from), incidents.CauseBpmnError, msg)
		return
	}
	r.fail(from, code, msg) // an error end event: the modelled outcome
}

// catcher returns the error boundary of activity that catches code: one
// naming the code wins over a catch-all.
func (r *runner) catcher(activity, code string) *model.Node {
	var all *model.Node
	for _, b := range r.p.Boundaries(activity) {
		if b.Event != model.ErrorEvent {
			continue
		}
		if b.ErrorCode == code {
			return b
		}
		if b.ErrorCode == "" && all == nil {
			all = b
		}
	}
	return all
}

// interrupt cancels host and continues from boundary event b: it
// returns the new track at b, ready to leave it.
func (r *runner) interrupt(host *Track, b *model.Node) *Track {
	scope, pred := host.Scope, host.ID
	r.cancelTrack(host)
	return r.spawn(b.ID, scope, pred, "")
}

// cancelTrack removes t with its waits and, for a sub-process, its scope;
// an incident on it is overtaken.
func (r *runner) cancelTrack(t *Track) {
	r.overtake(t, "the node was cancelled")
	r.disarm(t)
	for _, sc := range slices.Clone(r.s.Scopes) {
		if sc.Owner == t.ID && sc.Compensation != "" { // a throw's running handler
			r.cancelCompensation(sc)
			continue
		}
		if sc.Owner == t.ID { // a sub-process, or each iteration of a loop
			for _, inner := range r.tracksIn(sc.ID) {
				r.cancelTrack(inner)
			}
			r.removeScope(sc.ID)
		}
	}
	r.s.removeTrack(t.ID)
}

func (r *runner) cancelAll() {
	for _, t := range r.tracksIn(RootScope) {
		r.cancelTrack(t)
	}
	for _, sc := range slices.Clone(r.s.Scopes) {
		if sc.Compensation != "" && sc.Owner == "" { // the operator's
			r.cancelCompensation(sc)
		}
	}
}

// fault is a technical failure at a node: an operation error or timeout,
// an expression or mapping error, a job's exhausted retries. It raises an
// incident; the instance stays alive (docs/incidents.md).
func (r *runner) fault(t *Track, n *model.Node, class, msg string) {
	if r.s.Parent != nil {
		// Incidents exist on top-level instances only: a child fails and
		// its caller's call activity raises the incident.
		r.fail(n.ID, "", msg)
		return
	}
	r.raise(t, n, class, msg)
}

func (r *runner) fail(node, code, msg string) {
	r.cancelAll()
	r.finish(Failed, &Failure{Node: node, Code: code, Message: msg}, msg)
}

func (r *runner) finish(status Status, f *Failure, text string) {
	if r.s.Status.Finished() {
		return
	}
	r.s.Status, r.s.Failure, r.s.EndedAt = status, f, r.env.Now
	r.s.Journal, r.s.Compensations = nil, nil // nothing is compensated after the end
	r.closeEventSubs(RootScope)
	r.dropWatch()
	kind := map[Status]FactKind{Completed: FactCompleted, Failed: FactFailed, Terminated: FactTerminated}[status]
	r.fact(kind, text)
	r.notifyParent()
	if m := r.s.StartMessage; m != nil && m.Key != "" {
		// The message partition lets the next message with this key start
		// an instance again.
		c := *m
		r.s.Outbox = append(r.s.Outbox, Effect{ID: "startEnded:" + r.s.ID, Kind: StartEnded, Correlation: &c})
	}
}

// Abort fails an instance from outside a step: the engine found it cannot
// continue (a corrupt checkpoint, a state too large to store). Its waits
// are cancelled and the failed fact is emitted.
func Abort(s *State, now time.Time, reason string) {
	if s.Status.Finished() {
		return
	}
	r := &runner{s: s, env: Env{Now: now}, outboxBase: len(s.Outbox)}
	for _, inc := range slices.Clone(s.Incidents) {
		r.closeIncident(inc, incidents.Overtaken, incidents.OvertakenKind, "", "the instance failed: "+reason)
	}
	for _, w := range s.Waits {
		r.unschedule(w)
	}
	s.Waits, s.Tracks, s.Stuck = nil, nil, nil
	s.Scopes = slices.DeleteFunc(s.Scopes, func(sc *Scope) bool { return sc.ID != RootScope })
	r.finish(Failed, &Failure{Message: reason}, reason)
}
