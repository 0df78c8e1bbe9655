package instance

import (
	"fmt"
	"slices"

	"github.com/jetbpm/jetbpm/engine/model"
	"github.com/jetbpm/jetbpm/incidents"
)

// A signal catch — an intermediate catch event, a signal boundary event or
// the signal start event of an event sub-process (eventsubprocess.go) —
// parks on a signal wait. Its subscription (the signal name, evaluated
// when the wait opens) goes to the signal index as a SignalSubscribe
// effect; a broadcast sends the instance one Signal event naming the
// waits it found there. Every way the wait closes — it fires (unless it
// repeats), its element completes or is cancelled, the instance ends —
// sends SignalUnsubscribe: unlike a message partition, the index never
// closes a subscription itself (docs/signals.md §3).

// SignalWait is an open signal subscription of a signal catch event,
// signal boundary event or event sub-process signal start; Wait.Sub holds
// its name (no key).
const SignalWait WaitKind = "signal"

// Signal effects and events (docs/signals.md).
const (
	// SignalSubscribe writes Effect.Sub, a signal subscription, to the
	// signal index; SignalUnsubscribe deletes it. Both are idempotent.
	SignalSubscribe   EffectKind = "signalSubscribe"
	SignalUnsubscribe EffectKind = "signalUnsubscribe"
	// BroadcastSignal broadcasts Effect.Signal (a signal throw); Effect.ID
	// is unique per activation of the throw and is the broadcast's id.
	BroadcastSignal EffectKind = "broadcastSignal"

	// SignalTo delivers broadcast Event.Signal (its variables in
	// Event.Vars) to every signal wait of its name the instance has when
	// the event is applied. A broadcast applied before is skipped; the
	// waits it lists that the instance no longer has are dropped from the
	// index.
	SignalTo EventKind = "signal"
)

// Broadcast is a signal on its way to an instance, or out of it: its
// name, the broadcast's id and, towards an instance, the waits the index
// listed for it.
type Broadcast struct {
	ID    string         `msgpack:"id" json:"id"`
	Name  string         `msgpack:"name" json:"name"`
	Vars  map[string]any `msgpack:"vars,omitempty" json:"vars,omitempty"`
	Waits []string       `msgpack:"waits,omitempty" json:"waits,omitempty"`
}

// signalName returns n's literal signal name or evaluates its name
// expression over vars.
func (r *runner) signalName(n *model.Node, vars map[string]any) (string, error) {
	s := n.Signal
	if s == nil {
		r.bug("node %q has no signal", n.ID)
	}
	e := s.NameCompiled()
	if e == nil {
		return s.Name, nil
	}
	v, err := e.Eval(vars)
	if err != nil {
		return "", fmt.Errorf("signal name: %w", err)
	}
	name, ok := v.(string)
	if !ok || name == "" {
		return "", fmt.Errorf("signal name %q is %s, want a non-empty string", s.NameExpr, describe(v))
	}
	return name, nil
}

// catchSignal parks t on a signal catch event's subscription.
func (r *runner) catchSignal(t *Track, n *model.Node) {
	name, err := r.signalName(n, r.visible(t))
	if err != nil {
		r.fault(t, n, incidents.CauseExpression, err.Error())
		return
	}
	t.State = Waiting
	r.signalSubscribe(t, n.ID, t.Activation, name, false)
}

// signalSubscribe parks on a signal wait for name, owned by track t, and
// announces it to the signal index.
func (r *runner) signalSubscribe(t *Track, node string, activation uint64, name string, repeat bool) {
	r.openSignalWait(&Wait{ID: r.waitID(node, activation), Kind: SignalWait, Track: t.ID, Node: node, Armed: r.env.Now}, name, repeat)
}

// openSignalWait adds signal wait w (owned by a track, or by a scope for
// an event sub-process's start) for name and announces it to the index.
func (r *runner) openSignalWait(w *Wait, name string, repeat bool) {
	w.Sub = &Subscription{Name: name, Instance: r.s.ID, ProcessID: r.s.ProcessID, Wait: w.ID, Repeat: repeat, Opened: r.env.Now}
	r.s.Waits = append(r.s.Waits, w)
	c := *w.Sub
	r.s.Outbox = append(r.s.Outbox, Effect{ID: "sigsub:" + w.ID, Kind: SignalSubscribe, Wait: w.ID, Sub: &c})
}

// signalUnsubscribe removes signal wait w from the index: a
// SignalSubscribe of this same step is taken back from the outbox instead.
func (r *runner) signalUnsubscribe(w *Wait) {
	mine := r.s.Outbox[r.outboxBase:]
	n := len(mine)
	mine = slices.DeleteFunc(mine, func(e Effect) bool { return e.Kind == SignalSubscribe && e.Wait == w.ID })
	r.s.Outbox = r.s.Outbox[:r.outboxBase+len(mine)]
	if len(mine) < n {
		return
	}
	c := *w.Sub
	r.s.Outbox = append(r.s.Outbox, Effect{ID: "sigunsub:" + w.ID, Kind: SignalUnsubscribe, Wait: w.ID, Sub: &c})
}

// signalBoundaries evaluates the names of activity n's signal boundaries
// that t does not wait on yet, by boundary id.
func (r *runner) signalBoundaries(t *Track, n *model.Node) (names map[string]string, err error) {
	for _, b := range r.p.Boundaries(n.ID) {
		if b.Event != model.SignalEvent || r.waitsAt(t, b.ID) {
			continue
		}
		name, err := r.signalName(b, r.visible(t))
		if err != nil {
			return nil, fmt.Errorf("signal boundary %q: %w", b.ID, err)
		}
		if names == nil {
			names = map[string]string{}
		}
		names[b.ID] = name
	}
	return names, nil
}

// armSignalBoundaries subscribes the signal boundaries names gives, in
// declaration order.
func (r *runner) armSignalBoundaries(t *Track, n *model.Node, names map[string]string) {
	for _, b := range r.p.Boundaries(n.ID) {
		if name, ok := names[b.ID]; ok {
			r.signalSubscribe(t, b.ID, t.Activation, name, !b.Interrupting)
		}
	}
}

// throwSignal runs a signal throw or signal end event: its input mappings
// give the signal's variables (none without them); the broadcast is an
// effect, and the node completes at once (an end event ends its token).
func (r *runner) throwSignal(t *Track, n *model.Node) {
	locals := t.Locals // its inputs, evaluated as it was entered
	name, err := r.signalName(n, r.visibleWith(t, locals))
	if err != nil {
		r.fault(t, n, incidents.CauseExpression, err.Error())
		return
	}
	id := "signal:" + r.waitID(n.ID, t.Activation)
	var vars map[string]any
	if len(locals) > 0 {
		vars = make(map[string]any, len(locals))
		for k, v := range locals {
			vars[k] = v
		}
	}
	r.s.Outbox = append(r.s.Outbox, Effect{ID: id, Kind: BroadcastSignal, Signal: &Broadcast{ID: id, Name: name, Vars: vars}})
	r.complete(t, n, nil, nil) // an end event has no outgoing flow: its token ends
}

// signalTo applies a SignalTo event (see SignalTo).
func (r *runner) signalTo(ev Event) bool {
	b := ev.Signal
	if b == nil || b.Name == "" {
		return false
	}
	seen := &Correlation{Name: b.Name, MessageID: "signal:" + b.ID}
	if b.ID != "" && r.applied(seen) {
		return false
	}
	var hits []*Wait
	for _, w := range r.s.Waits {
		if w.Kind == SignalWait && w.Sub != nil && w.Sub.Name == b.Name {
			hits = append(hits, w)
		}
	}
	stale := false
	for _, id := range b.Waits {
		if !slices.ContainsFunc(hits, func(w *Wait) bool { return w.ID == id }) {
			stale = true
			r.s.Outbox = append(r.s.Outbox, Effect{ID: "sigunsub:" + id, Kind: SignalUnsubscribe, Wait: id,
				Sub: &Subscription{Name: b.Name, Instance: r.s.ID, ProcessID: r.s.ProcessID, Wait: id}})
		}
	}
	if len(hits) == 0 {
		return stale
	}
	r.remember(seen)
	for _, w := range hits {
		if r.s.wait(w.ID) != w {
			continue // an interrupting boundary fired before it cancelled it
		}
		if !w.Sub.Repeat {
			r.s.Waits = slices.DeleteFunc(r.s.Waits, func(x *Wait) bool { return x == w })
			r.signalUnsubscribe(w)
		}
		r.deliver(w, ev.Vars)
	}
	return true
}
