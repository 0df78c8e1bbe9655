package instance

import (
	"fmt"
	"slices"
	"time"

	"github.com/jetbpm/jetbpm/engine/model"
	"github.com/jetbpm/jetbpm/incidents"
)

// arm records a timer wait and schedules it.
func (r *runner) arm(w *Wait) {
	r.s.Waits = append(r.s.Waits, w)
	r.schedule(w)
}

// resolveTimer returns the timer of node n given the variables it sees,
// and the value to keep on its wait when an expression gave it ("" for a
// literal timer).
func resolveTimer(n *model.Node, vars map[string]any) (*model.Timer, string, error) {
	tm, err := n.Timer.Resolve(vars)
	if err != nil || n.Timer.Expr == "" {
		return tm, "", err
	}
	return tm, tm.Value, nil
}

// waitTimer returns the timer timer wait w was armed with: base (the
// model's), with the value its expression gave, if any.
func (r *runner) waitTimer(base *model.Timer, w *Wait) *model.Timer {
	if w.Timer == "" {
		return base
	}
	tm, err := base.WithValue(w.Timer)
	if err != nil {
		r.bug("timer wait %q: value %q no longer parses: %v", w.ID, w.Timer, err)
	}
	return tm
}

// timerBoundary is a timer boundary event resolved for arming.
type timerBoundary struct {
	node  *model.Node
	timer *model.Timer
	value string
}

// timerBoundaries resolves the timers of activity n's timer boundaries
// over vars, in declaration order.
func (r *runner) timerBoundaries(n *model.Node, vars map[string]any) ([]timerBoundary, error) {
	var out []timerBoundary
	for _, b := range r.p.Boundaries(n.ID) {
		if b.Event != model.TimerEvent {
			continue
		}
		tm, v, err := resolveTimer(b, vars)
		if err != nil {
			return nil, fmt.Errorf("timer boundary %q: %w", b.ID, err)
		}
		out = append(out, timerBoundary{b, tm, v})
	}
	return out, nil
}

// armTimerBoundaries arms timer boundaries tbs of t's activity, counted
// from armed.
func (r *runner) armTimerBoundaries(t *Track, tbs []timerBoundary, armed time.Time) {
	for _, b := range tbs {
		if due, ok := b.timer.Due(armed, 0); ok {
			r.arm(&Wait{ID: r.waitID(b.node.ID, t.Activation), Kind: BoundaryWait, Track: t.ID, Node: b.node.ID, Due: due, Armed: armed, Timer: b.value})
		}
	}
}

// armBoundaries arms the timer and message boundary events of an
// activity that t now waits in. Timers are armed once per visit (an
// incident retry keeps the first entry's waits); each message boundary is
// subscribed unless t already holds its wait. When a message boundary's
// subscription cannot be evaluated, nothing is armed: what the activity
// opened on entry is taken back (unpark), the activity faults (incident,
// cause expression) and armBoundaries returns false.
func (r *runner) armBoundaries(t *Track, n *model.Node) bool {
	if t.Inner {
		return true // a multi-instance body arms its activity's boundaries once
	}
	var subs []*Wait
	for _, b := range r.p.Boundaries(n.ID) {
		if b.Event != model.MessageEvent || r.waitsAt(t, b.ID) {
			continue
		}
		sub, err := r.subscription(b, r.visible(t))
		if err != nil {
			r.unpark(t, n)
			r.fault(t, n, incidents.CauseExpression, fmt.Sprintf("message boundary %q: %v", b.ID, err))
			return false
		}
		sub.Repeat = !b.Interrupting
		subs = append(subs, &Wait{Node: b.ID, Sub: sub})
	}
	signals, err := r.signalBoundaries(t, n)
	var timers []timerBoundary
	if err == nil && !t.BoundariesArmed {
		timers, err = r.timerBoundaries(n, r.visible(t))
	}
	if err != nil {
		r.unpark(t, n)
		r.fault(t, n, incidents.CauseExpression, err.Error())
		return false
	}
	if !t.BoundariesArmed {
		t.BoundariesArmed = true
		r.armTimerBoundaries(t, timers, r.env.Now)
	}
	for _, w := range subs {
		r.subscribe(t, w.Node, t.Activation, w.Sub)
	}
	r.armSignalBoundaries(t, n, signals)
	r.armConditionalBoundaries(t, n)
	return true
}

// waitsAt reports whether track t owns a wait at node.
func (r *runner) waitsAt(t *Track, node string) bool {
	return slices.ContainsFunc(r.s.Waits, func(w *Wait) bool { return w.Track == t.ID && w.Node == node })
}

// unpark takes back what activity n opened on entry for t before its
// boundaries failed: its own wait (a job, operation, child start or
// subscription queued in this same step is dropped from the outbox), the
// scope it owns (a sub-process's, still empty) and its loop.
func (r *runner) unpark(t *Track, n *model.Node) {
	r.s.Waits = slices.DeleteFunc(r.s.Waits, func(w *Wait) bool {
		if w.Track != t.ID || w.Node != n.ID {
			return false
		}
		r.unschedule(w)
		return true
	})
	for _, sc := range slices.Clone(r.s.Scopes) {
		if sc.Owner == t.ID {
			r.removeScope(sc.ID)
		}
	}
	t.Loop = nil
}

// disarm removes every wait of t. A timer scheduled in this same step is
// dropped from the outbox; an older one is cancelled.
func (r *runner) disarm(t *Track) {
	r.s.Waits = slices.DeleteFunc(r.s.Waits, func(w *Wait) bool {
		if w.Track != t.ID {
			return false
		}
		r.unschedule(w)
		return true
	})
}

// unschedule takes back what arming w published: a timer or a job queued
// in this same step is dropped from the outbox, an older one is cancelled.
// A message wait is unsubscribed; a user task is canceled (cancelTask).
func (r *runner) unschedule(w *Wait) {
	switch w.Kind {
	case MessageWait:
		r.unsubscribe(w)
		return
	case SignalWait:
		r.signalUnsubscribe(w)
		return
	case UserTaskWait:
		r.cancelTask(w)
		return
	case ConditionalWait, TriggerWait:
		return // nothing outside the instance knows it
	}
	n := len(r.s.Outbox)
	mine := r.s.Outbox[r.outboxBase:]
	mine = slices.DeleteFunc(mine, func(e Effect) bool {
		return (e.Kind == ScheduleTimer || e.Kind == EnqueueJob || e.Kind == StartChildEffect || e.Kind == RunOperation) && e.Wait == w.ID
	})
	r.s.Outbox = r.s.Outbox[:r.outboxBase+len(mine)]
	if len(r.s.Outbox) < n {
		return
	}
	if w.Kind == ChildWait {
		r.s.Outbox = append(r.s.Outbox, Effect{ID: "cancel:" + w.Child, Kind: CancelChild, Child: w.Child})
		return
	}
	if w.Kind == OperationWait {
		r.s.Outbox = append(r.s.Outbox, Effect{ID: "cancel:" + w.ID, Kind: CancelOperation, Wait: w.ID})
		return
	}
	if w.Kind == JobWait {
		r.s.Outbox = append(r.s.Outbox, Effect{ID: "cancel:" + w.ID, Kind: CancelJob, Wait: w.ID, Topic: w.Job.Topic})
		return
	}
	r.s.Outbox = append(r.s.Outbox, Effect{ID: "cancel:" + w.ID, Kind: CancelTimer, Wait: w.ID})
}

func (r *runner) timerFired(w *Wait) {
	if w.Kind == OperationWatch {
		r.watchFired(w)
		return
	}
	if w.Kind == EventSubTimer {
		r.eventSubTimerFired(w)
		return
	}
	t := r.s.track(w.Track)
	if t == nil {
		r.bug("wait %q belongs to missing track %q", w.ID, w.Track)
	}
	n := r.p.Node(w.Node)
	if n == nil {
		r.bug("wait %q at unknown node %q", w.ID, w.Node)
	}
	r.s.Waits = slices.DeleteFunc(r.s.Waits, func(x *Wait) bool { return x == w })
	if w.Kind == TaskTimeoutWait {
		r.taskTimedOut(t, n, w)
		return
	}
	if w.Kind == IncidentRetryWait {
		if inc := r.s.incidentOf(t.ID); inc != nil {
			inc.RetryDue = timeZero
			r.retryIncident(inc, "")
		}
		return
	}
	if w.Kind == TimerWait && t.Node != n.ID {
		r.branchWon(t, n, nil) // a timer branch of an event-based gateway
		return
	}
	if w.Kind == TimerWait {
		t.State = Ready
		r.complete(t, n, nil, nil)
		return
	}

	if n.Interrupting {
		r.interrupt(t, n)
		return
	}
	r.spawn(n.ID, t.Scope, t.ID, "")
	if due, ok := r.waitTimer(n.Timer, w).Following(w.Armed, w.Due, w.Firing+1); ok {
		r.arm(&Wait{ID: w.ID, Kind: BoundaryWait, Track: w.Track, Node: w.Node, Due: due, Armed: w.Armed, Firing: w.Firing + 1, Timer: w.Timer})
	}
}

// wake consumes wait w: it is removed and its track made ready to go on
// at the wait's node.
func (r *runner) wake(w *Wait) (*Track, *model.Node) {
	t := r.s.track(w.Track)
	n := r.p.Node(w.Node)
	if t == nil || n == nil {
		r.bug("%s wait %q has no track or node", w.Kind, w.ID)
	}
	r.s.Waits = slices.DeleteFunc(r.s.Waits, func(x *Wait) bool { return x == w })
	t.State = Ready
	return t, n
}
