package instance

import (
	"fmt"
	"slices"

	"github.com/jetbpm/jetbpm/engine/model"
)

// Escalations (docs/eventsubprocesses.md §4). An escalation throw or end
// event looks for its catcher from its scope outwards: an escalation
// event sub-process of the scope, then an escalation boundary on the
// sub-process or call activity owning it. An interrupting catcher
// cancels the thrower with everything else it ends; otherwise, caught or
// not, the thrower goes on. An escalation that reaches a called
// instance's root is reported to its caller, whose call activity may
// catch it; uncaught anywhere, it is dropped without an incident.

// Escalation is an escalation a called instance reports to its caller:
// its code, the node that threw it, and the child's counter at the
// throw, which names the report (the caller applies it once).
type Escalation struct {
	Code string `msgpack:"code"`
	Node string `msgpack:"node"`
	Seq  uint64 `msgpack:"seq"`
}

// throwEscalation throws n's escalation from t, then — unless an
// interrupting catcher cancelled t — an intermediate throw event passes
// the token on and an end event ends it.
func (r *runner) throwEscalation(t *Track, n *model.Node) {
	r.escalate(t.Scope, n.Escalation, n.ID)
	if r.s.Status.Finished() || r.s.track(t.ID) == nil {
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

// escalate finds the catcher of escalation code thrown in scope scopeID
// and triggers it. Uncaught in a called instance, it is reported to the
// caller.
func (r *runner) escalate(scopeID, code, from string) {
	caught := r.catchOutward(scopeID, model.EscalationEvent, code, func(owner *Track) bool {
		// A multi-instance iteration's escalation is caught on its body:
		// the walk up reaches the body's scope next.
		return !owner.Inner && r.catchEscalation(owner, code)
	})
	if !caught && r.s.Parent != nil {
		seq := r.next()
		r.s.Outbox = append(r.s.Outbox, Effect{ID: fmt.Sprintf("esc:%s:%d", r.s.ID, seq), Kind: NotifyParent, Parent: r.s.Parent,
			Result: &ChildResult{Child: r.s.ID, Status: r.s.Status, Escalation: &Escalation{Code: code, Node: from, Seq: seq}}})
	}
}

// catchEscalation lets an escalation boundary on host's activity catch
// code (one naming it wins over a catch-all): an interrupting one cancels
// host, a non-interrupting one starts a token beside it.
func (r *runner) catchEscalation(host *Track, code string) bool {
	var b *model.Node
	for _, x := range r.p.Boundaries(host.Node) {
		if x.Event != model.EscalationEvent {
			continue
		}
		if x.Escalation == code {
			b = x
			break
		}
		if x.Escalation == "" && b == nil {
			b = x
		}
	}
	switch {
	case b == nil:
		return false
	case b.Interrupting:
		r.interrupt(host, b)
	default:
		r.spawn(b.ID, host.Scope, host.ID, "")
	}
	return true
}

// childEscalated applies an escalation reported by the child of call
// activity wait w, once: the call activity's boundary, else the scopes
// around it, may catch it; the wait stays, as the child goes on.
func (r *runner) childEscalated(w *Wait, res *ChildResult) bool {
	id := fmt.Sprintf("esc:%s:%d", res.Child, res.Escalation.Seq)
	if slices.Contains(r.s.Correlations, id) {
		return false
	}
	r.rememberID(id)
	t := r.s.track(w.Track)
	if t == nil {
		r.bug("child wait %q has no track %q", w.ID, w.Track)
	}
	if !t.Inner && r.catchEscalation(t, res.Escalation.Code) {
		return true
	}
	r.escalate(t.Scope, res.Escalation.Code, w.Node)
	return true
}

// rememberID records an applied event id among the correlation ids
// (State.Correlations), keeping the newest maxCorrelations.
func (r *runner) rememberID(id string) {
	r.s.Correlations = append(r.s.Correlations, id)
	if n := len(r.s.Correlations); n > maxCorrelations {
		r.s.Correlations = slices.Delete(r.s.Correlations, 0, n-maxCorrelations)
	}
}

// escalateTask applies a task's escalate command (TaskEscalate): refused
// when it names no code, its variables cannot be stored, or nothing
// catches the escalation in an instance without a caller (Camunda 7's
// handleEscalation throws then, and its transaction changes nothing).
// Else its variables are set, the task's record lists the command and an
// escalated fact is published, then the task's boundary or the scopes
// around it catch the escalation as they catch a thrown one.
func (r *runner) escalateTask(w *Wait, ev Event) {
	task, c := w.Task, ev.Task
	if c.EscalationCode == "" {
		r.refuseTask(w, ev, "escalate names no escalation code")
		return
	}
	vars, reason := r.taskVars(c.Vars)
	if reason != "" {
		r.refuseTask(w, ev, reason)
		return
	}
	t := r.s.track(w.Track)
	if t == nil {
		r.bug("task wait %q has no track %q", w.ID, w.Track)
	}
	if r.s.Parent == nil && !r.escalationCaught(t, c.EscalationCode) {
		r.refuseTask(w, ev, fmt.Sprintf("escalation %q from task %s is not caught: no escalation boundary on %s and no escalation event sub-process or boundary around it catches it", c.EscalationCode, task.ID, task.Node))
		return
	}
	r.taskOutcome(task, ev, "")
	r.publishTask(w)
	f := r.taskFact(task, TaskFactEscalated, c.User)
	f.EscalationCode = c.EscalationCode
	for _, k := range sortedKeys(vars) {
		r.storeVar(t.Scope, k, vars[k])
	}
	if !t.Inner && r.catchEscalation(t, c.EscalationCode) {
		return
	}
	r.escalate(t.Scope, c.EscalationCode, w.Node)
}

// escalationCaught reports whether an escalation with code raised from
// track t would be caught in this instance: by an escalation boundary on
// t's activity, or, from t's scope outwards, by an escalation event
// sub-process of a scope or a boundary on the activity owning it. It
// changes nothing.
func (r *runner) escalationCaught(t *Track, code string) bool {
	catches := func(node string) bool {
		return slices.ContainsFunc(r.p.Boundaries(node), func(b *model.Node) bool {
			return b.Event == model.EscalationEvent && (b.Escalation == code || b.Escalation == "")
		})
	}
	if !t.Inner && catches(t.Node) {
		return true
	}
	for scopeID := t.Scope; ; {
		if r.eventSubCatcher(scopeID, model.EscalationEvent, code) != nil {
			return true
		}
		if scopeID == RootScope {
			return false
		}
		sc := r.s.scope(scopeID)
		if sc == nil {
			r.bug("escalation raised in unknown scope %q", scopeID)
		}
		owner := r.s.track(sc.Owner)
		if owner == nil {
			r.bug("scope %q has no owner track %q", sc.ID, sc.Owner)
		}
		if !owner.Inner && catches(owner.Node) {
			return true
		}
		scopeID = owner.Scope
	}
}
