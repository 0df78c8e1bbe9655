package instance

import (
	"fmt"
	"slices"

	"github.com/jetbpm/jetbpm/engine/model"
)

// Event sub-processes (docs/eventsubprocesses.md). Each activation of a
// scope — the instance, or one activation of an embedded sub-process —
// arms the timer, message, signal and conditional start events of its
// event sub-processes when it starts: waits that name the scope (Wait.Scope)
// instead of a track. Whatever removes the scope closes them in the same step
// (removeScope, finish). A trigger runs the event sub-process as a child
// scope of the scope, owned by a track waiting at the event sub-process
// node in the scope, so the scope cannot complete before it does. An
// interrupting one first cancels every other track of the scope and
// closes its waits, once per activation (Scope.Interrupted).

// eventSubNode returns the node whose event sub-processes belong to scope
// sc: "" for the root, the sub-process of a sub-process activation. ok is
// false for the other scopes (a multi-instance iteration, an event
// sub-process's own scope).
func (r *runner) eventSubNode(sc *Scope) (node string, ok bool) {
	if sc.ID == RootScope {
		return "", true
	}
	if sc.Iteration > 0 {
		return "", false
	}
	owner := r.s.track(sc.Owner)
	if owner == nil {
		return "", false
	}
	n := r.p.Node(owner.Node)
	if n == nil || n.Kind != model.SubProcess || n.TriggeredByEvent {
		return "", false
	}
	return n.ID, true
}

// eventSubStarts returns the start events of the event sub-processes that
// scope scopeID can still trigger: none once it was interrupted.
func (r *runner) eventSubStarts(scopeID string) []*model.Node {
	sc := r.s.scope(scopeID)
	if sc == nil || sc.Interrupted {
		return nil
	}
	node, ok := r.eventSubNode(sc)
	if !ok {
		return nil
	}
	return r.p.EventSubStarts(node)
}

// openEventSubs arms the timer, message and signal start events of the
// event sub-processes of scope sc, which has just started; vars are the
// variables it sees. When a message subscription, a signal name or a
// timer expression cannot be evaluated nothing is armed and the error is
// returned.
func (r *runner) openEventSubs(sc *Scope, vars map[string]any) error {
	starts := r.eventSubStarts(sc.ID)
	subs := map[string]*Subscription{}
	signals := map[string]string{}
	type timer struct {
		t     *model.Timer
		value string
	}
	timers := map[string]timer{}
	for _, s := range starts {
		switch s.Event {
		case model.TimerEvent:
			tm, value, err := resolveTimer(s, vars)
			if err != nil {
				return fmt.Errorf("event sub-process %q: %w", s.Scope, err)
			}
			timers[s.ID] = timer{tm, value}
		case model.MessageEvent:
			sub, err := r.subscription(s, vars)
			if err != nil {
				return fmt.Errorf("event sub-process %q: %w", s.Scope, err)
			}
			sub.Repeat = !r.p.Node(s.Scope).Interrupting
			subs[s.ID] = sub
		case model.SignalEvent:
			name, err := r.signalName(s, vars)
			if err != nil {
				return fmt.Errorf("event sub-process %q: %w", s.Scope, err)
			}
			signals[s.ID] = name
		}
	}
	for _, s := range starts {
		switch s.Event {
		case model.TimerEvent:
			tm := timers[s.ID]
			if due, ok := tm.t.Due(r.env.Now, 0); ok {
				r.arm(&Wait{ID: r.waitID(s.ID, r.next()), Kind: EventSubTimer, Scope: sc.ID, Node: s.ID, Due: due, Armed: r.env.Now, Timer: tm.value})
			}
		case model.MessageEvent:
			sub := subs[s.ID]
			w := &Wait{ID: r.waitID(s.ID, r.next()), Kind: MessageWait, Scope: sc.ID, Node: s.ID, Armed: r.env.Now, Sub: sub}
			sub.Wait, sub.Opened = w.ID, r.env.Now
			r.s.Waits = append(r.s.Waits, w)
			if sub.Key != "" {
				c := *sub
				r.s.Outbox = append(r.s.Outbox, Effect{ID: "sub:" + w.ID, Kind: Subscribe, Wait: w.ID, Sub: &c})
			}
		case model.SignalEvent:
			w := &Wait{ID: r.waitID(s.ID, r.next()), Kind: SignalWait, Scope: sc.ID, Node: s.ID, Armed: r.env.Now}
			r.openSignalWait(w, signals[s.ID], !r.p.Node(s.Scope).Interrupting)
		case model.ConditionalEvent:
			r.openConditional(&Wait{ID: r.waitID(s.ID, r.next()), Scope: sc.ID, Node: s.ID})
		}
	}
	return nil
}

// closeEventSubs closes the event sub-process waits of a scope: a timer
// or subscription of this step is taken back, an older one cancelled.
func (r *runner) closeEventSubs(scopeID string) {
	r.s.Waits = slices.DeleteFunc(r.s.Waits, func(w *Wait) bool {
		if w.Track != "" || w.Scope != scopeID {
			return false
		}
		r.unschedule(w)
		return true
	})
}

// removeScope removes a scope that ended, closing its event sub-process
// waits.
func (r *runner) removeScope(id string) {
	r.closeEventSubs(id)
	r.s.removeScope(id)
}

// eventSubTimerFired triggers the event sub-process of timer wait w. A
// non-interrupting cycle is armed again for its next firing.
func (r *runner) eventSubTimerFired(w *Wait) {
	start := r.p.Node(w.Node)
	if start == nil || r.s.scope(w.Scope) == nil {
		r.bug("event sub-process wait %q has no node or scope", w.ID)
	}
	r.s.Waits = slices.DeleteFunc(r.s.Waits, func(x *Wait) bool { return x == w })
	if !r.p.Node(start.Scope).Interrupting {
		if due, ok := r.waitTimer(start.Timer, w).Following(w.Armed, w.Due, w.Firing+1); ok {
			r.arm(&Wait{ID: w.ID, Kind: EventSubTimer, Scope: w.Scope, Node: w.Node, Due: due, Armed: w.Armed, Firing: w.Firing + 1, Timer: w.Timer})
		}
	}
	r.triggerEventSub(w.Scope, start, nil)
}

// eventSubCatcher returns the start event of the event sub-process of
// scope scopeID that catches an error (ev ErrorEvent) or escalation with
// code: one naming the code wins over a catch-all; nil if none does.
func (r *runner) eventSubCatcher(scopeID string, ev model.EventType, code string) *model.Node {
	var all *model.Node
	for _, s := range r.eventSubStarts(scopeID) {
		if s.Event != ev {
			continue
		}
		c := s.ErrorCode
		if ev == model.EscalationEvent {
			c = s.Escalation
		}
		if c == code {
			return s
		}
		if c == "" && all == nil {
			all = s
		}
	}
	return all
}

// triggerEventSub runs the event sub-process of start event start in
// scope scopeID: a track waiting at the event sub-process node owns its
// new scope, where a track starts at start (completing at once with vars,
// a message's variables, when there are any). An interrupting one first
// marks the scope interrupted, closes its event sub-process waits and
// cancels every track of the scope.
func (r *runner) triggerEventSub(scopeID string, start *model.Node, vars map[string]any) {
	sc := r.s.scope(scopeID)
	sp := r.p.Node(start.Scope)
	if sc == nil || sp == nil {
		r.bug("event sub-process of %q triggered in unknown scope %q", start.ID, scopeID)
	}
	if sp.Interrupting {
		sc.Interrupted = true
		r.closeEventSubs(scopeID)
		for _, t := range r.tracksIn(scopeID) {
			r.cancelTrack(t)
		}
	}
	owner := r.spawn(sp.ID, scopeID, "", "")
	owner.State = Waiting
	inner := &Scope{ID: fmt.Sprintf("s%d", r.next()), Parent: scopeID, Owner: owner.ID}
	r.s.Scopes = append(r.s.Scopes, inner)
	t := r.spawn(start.ID, inner.ID, owner.ID, "")
	if len(vars) > 0 {
		r.fire(t, start, vars)
	}
}
