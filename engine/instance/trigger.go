package instance

import (
	"slices"

	"github.com/jetbpm/jetbpm/engine/model"
)

// A receive task without a message is a plain wait state (Camunda 7's
// receive task without messageRef): its token parks on a trigger wait
// until the engine is told to move it on — Engine.Trigger, `jetbpm
// trigger`, Camunda 7's POST /execution/{id}/signal. Nothing outside the
// instance knows the wait; its boundary events are armed as usual.

// TriggerWait is a plain receive task waiting to be triggered.
const TriggerWait WaitKind = "trigger"

// Trigger moves on the token parked on trigger wait Event.Wait: the
// receive task completes with Event.Vars as its results (its output
// mappings see them; without mappings they are written to its scope).
// Event.ID names the request: an ID applied before, or a wait the
// instance no longer has, is not applied.
const Trigger EventKind = "trigger"

// waitTrigger parks t on plain receive task n.
func (r *runner) waitTrigger(t *Track, n *model.Node) {
	locals := t.Locals // its inputs, evaluated as it was entered
	t.State, t.Locals = Waiting, locals
	r.s.Waits = append(r.s.Waits, &Wait{ID: r.waitID(n.ID, t.Activation), Kind: TriggerWait, Track: t.ID, Node: n.ID, Armed: r.env.Now})
	r.armBoundaries(t, n)
}

// trigger applies a Trigger event.
func (r *runner) trigger(ev Event) bool {
	if ev.ID == "" || slices.Contains(r.s.Correlations, ev.ID) {
		return false
	}
	w := r.s.wait(ev.Wait)
	if w == nil || w.Kind != TriggerWait {
		return false
	}
	for k, v := range ev.Vars {
		if _, err := Normalize(v); err != nil || k == "" {
			return false
		}
		if r.env.CheckValue != nil && r.env.CheckValue(k, v) != nil {
			return false
		}
	}
	t, n := r.s.track(w.Track), r.p.Node(w.Node)
	if t == nil || n == nil {
		r.bug("trigger wait %q has no track or node", w.ID)
	}
	r.rememberID(ev.ID)
	r.s.Waits = slices.DeleteFunc(r.s.Waits, func(x *Wait) bool { return x == w })
	t.State = Ready
	r.complete(t, n, t.Locals, ev.Vars)
	return true
}
