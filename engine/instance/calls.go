package instance

import (
	"fmt"
	"maps"

	"github.com/jetbpm/jetbpm/engine/model"
	"github.com/jetbpm/jetbpm/incidents"
)

// ParentRef names the call activity a child instance reports to.
type ParentRef struct {
	Instance string `msgpack:"instance"`
	Wait     string `msgpack:"wait"`
}

// ChildStart asks the engine to start a child instance.
type ChildStart struct {
	ID        string         `msgpack:"id"`
	ProcessID string         `msgpack:"process"`
	Version   int            `msgpack:"version,omitempty"`
	Vars      map[string]any `msgpack:"vars,omitempty"`
	Parent    ParentRef      `msgpack:"parent"`
}

// ChildResult is how a child instance ended, for its caller.
type ChildResult struct {
	Child   string         `msgpack:"child"`
	Status  Status         `msgpack:"status"`
	Vars    map[string]any `msgpack:"vars,omitempty"`
	Failure *Failure       `msgpack:"failure,omitempty"`
	// Escalation, when set, is not the child's end: an escalation
	// reached the child's root uncaught, and the child goes on
	// (escalation.go). Status is the child's, active.
	Escalation *Escalation `msgpack:"escalation,omitempty"`
}

// childID names the child of one activation of a call activity: unique per
// activation (a loop or an incident retry starts a new child), derivable
// again after a crash, and a valid instance id.
func (r *runner) childID(activation uint64) string {
	return fmt.Sprintf("%s_c%d", r.s.ID, activation)
}

// call parks t on a call activity and starts its child (docs/
// callactivity-multiinstance.md §1). The child gets the mapped inputs, or
// every variable the activity sees.
func (r *runner) call(t *Track, n *model.Node) {
	locals, input := r.taskInput(t, n)
	if len(n.Inputs) == 0 && n.Call.NoInputPropagation {
		input = map[string]any{}
	}
	w := &Wait{ID: r.waitID(n.ID, t.Activation), Kind: ChildWait, Track: t.ID, Node: n.ID, Armed: r.env.Now, Child: r.childID(t.Activation)}
	r.s.Waits = append(r.s.Waits, w)
	t.State, t.Locals = Waiting, locals
	r.s.Outbox = append(r.s.Outbox, Effect{ID: "child:" + w.Child, Kind: StartChildEffect, Wait: w.ID, Start: &ChildStart{
		ID: w.Child, ProcessID: n.Call.ProcessID, Version: n.Call.Version, Vars: deepCopyMap(input),
		Parent: ParentRef{Instance: r.s.ID, Wait: w.ID},
	}})
	r.armBoundaries(t, n)
}

// childDone applies a child's end to the waiting call activity: completed
// → outputs and leave; failed with a BPMN error → thrown at the call
// activity, where a boundary may catch it; failed otherwise → an incident
// on the call activity carrying the child's diagnostics.
func (r *runner) childDone(w *Wait, res *ChildResult) {
	t, n := r.wake(w)
	switch {
	case res.Status == Completed:
		vars, err := NormalizeVars(res.Vars)
		if err != nil {
			r.fault(t, n, incidents.CauseDataFlow, "called instance "+res.Child+": "+err.Error())
			return
		}
		if len(n.Outputs) == 0 && n.Call.NoOutputPropagation {
			vars = nil
		}
		r.complete(t, n, t.Locals, vars)
	case res.Failure != nil && res.Failure.Code != "":
		r.throw(t, n.ID, t.Scope, res.Failure.Code, "in called instance "+res.Child+": "+res.Failure.Message)
	default:
		why := string(res.Status)
		if res.Failure != nil {
			why += ": " + res.Failure.Message
		}
		r.fault(t, n, incidents.CauseChildFailed, "called instance "+res.Child+" "+why)
	}
}

// notifyParent tells a child's caller how it ended.
func (r *runner) notifyParent() {
	if r.s.Parent == nil {
		return
	}
	res := &ChildResult{Child: r.s.ID, Status: r.s.Status, Failure: r.s.Failure}
	if r.s.Status == Completed {
		res.Vars = deepCopyMap(maps.Clone(r.s.Variables()))
	}
	r.s.Outbox = append(r.s.Outbox, Effect{ID: "done:" + r.s.ID, Kind: NotifyParent, Parent: r.s.Parent, Result: res})
}
