package instance

import (
	"slices"

	"github.com/jetbpm/jetbpm/engine/model"
)

// maxCorrelations bounds State.Correlations: the ids of the last
// correlations applied, by which a redelivered one is recognised.
const maxCorrelations = 64

// correlate applies a Correlate event: the message partition offers a
// message to the message wait ev.Wait. A correlation applied before (a
// redelivery) is skipped. If the wait is gone — its element was left
// meanwhile — or the instance has ended, the instance hands the message
// back (RejectMessage) so the partition can offer it to another
// subscription of the process: a rejection changes the outbox, so it
// counts as applied.
func (r *runner) correlate(ev Event) bool {
	c := ev.Correlation
	if c == nil || ev.Wait == "" || r.applied(c) {
		return false
	}
	w := r.s.wait(ev.Wait)
	if r.s.Status.Finished() || w == nil || w.Kind != MessageWait || w.Sub == nil || w.Sub.Name != c.Name || w.Sub.Key != c.Key {
		r.reject(ev.Wait, c, ev.Vars)
		return true
	}
	r.remember(c)
	if !w.Sub.Repeat {
		// The partition closed the subscription when it offered the message.
		r.s.Waits = slices.DeleteFunc(r.s.Waits, func(x *Wait) bool { return x == w })
	}
	r.deliver(w, ev.Vars)
	return true
}

// messageTo applies a MessageTo event: message ev.Message sent straight
// to this instance. The oldest open message wait of that name takes it,
// whatever its key; a wait that does not repeat closes, and with it its
// subscription at the partition. With no such wait it is not applied.
func (r *runner) messageTo(ev Event) bool {
	if ev.Message == "" || ev.Correlation != nil && r.applied(ev.Correlation) {
		return false
	}
	var w *Wait
	for _, x := range r.s.Waits {
		if x.Kind == MessageWait && x.Sub != nil && x.Sub.Name == ev.Message && (w == nil || x.Sub.Opened.Before(w.Sub.Opened)) {
			w = x
		}
	}
	if w == nil {
		return false
	}
	if ev.Correlation != nil {
		r.remember(ev.Correlation)
	}
	if !w.Sub.Repeat {
		r.s.Waits = slices.DeleteFunc(r.s.Waits, func(x *Wait) bool { return x == w })
		r.unsubscribe(w)
	}
	r.deliver(w, ev.Vars)
	return true
}

// deliver fires the element of message wait w with the message's
// variables: a catch event or receive task completes with them as its
// results (output mappings over them, else all of them merged); an
// interrupting boundary cancels its activity and leaves with them; a
// non-interrupting one starts a new token at the boundary each time; a
// branch of an event-based gateway wins the gateway.
func (r *runner) deliver(w *Wait, vars map[string]any) {
	if w.Track == "" && w.Scope != "" {
		r.triggerEventSub(w.Scope, r.p.Node(w.Node), vars) // an event sub-process's start
		return
	}
	t, n := r.s.track(w.Track), r.p.Node(w.Node)
	if t == nil || n == nil {
		r.bug("message wait %q has no track or node", w.ID)
	}
	switch {
	case n.Kind == model.BoundaryEvent && n.Interrupting:
		r.fire(r.interrupt(t, n), n, vars)
	case n.Kind == model.BoundaryEvent:
		r.fire(r.spawn(n.ID, t.Scope, t.ID, ""), n, vars)
	case t.Node != n.ID:
		r.branchWon(t, n, vars)
	default:
		t.State = Ready
		r.complete(t, n, t.Locals, vars)
	}
}

// applied reports whether correlation c was applied before. A message
// sent straight to the instance without a message id cannot be told
// from another one and is never taken for a redelivery.
func (r *runner) applied(c *Correlation) bool {
	return identified(c) && slices.Contains(r.s.Correlations, c.ID())
}

// remember records correlation c as applied, keeping the newest
// maxCorrelations.
func (r *runner) remember(c *Correlation) {
	if !identified(c) {
		return
	}
	r.s.Correlations = append(r.s.Correlations, c.ID())
	if n := len(r.s.Correlations); n > maxCorrelations {
		r.s.Correlations = slices.Delete(r.s.Correlations, 0, n-maxCorrelations)
	}
}

func identified(c *Correlation) bool { return c.Seq != 0 || c.MessageID != "" }

// reject hands correlation c, offered to wait, back to its message
// partition. The subscription it names is rebuilt from the correlation
// (name and key) and the instance, as the partition stored it. A message
// the partition does not keep (c.ReturnBy set) goes back with its
// variables, so the partition can offer it again.
func (r *runner) reject(wait string, c *Correlation, vars map[string]any) {
	id := "rej:" + wait + ":" + c.ID()
	if slices.ContainsFunc(r.s.Outbox[r.outboxBase:], func(e Effect) bool { return e.ID == id }) {
		return // the same offer twice in one batch
	}
	corr := *c
	eff := Effect{ID: id, Kind: RejectMessage, Wait: wait, Correlation: &corr, Sub: &Subscription{
		Name: c.Name, Key: c.Key, Instance: r.s.ID, ProcessID: r.s.ProcessID, Wait: wait,
	}}
	if !c.ReturnBy.IsZero() {
		eff.Message = &OutMessage{Name: c.Name, Key: c.Key, Vars: vars, ID: c.MessageID}
	}
	r.s.Outbox = append(r.s.Outbox, eff)
}
