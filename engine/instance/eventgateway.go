package instance

import (
	"fmt"
	"time"

	"github.com/jetbpm/jetbpm/engine/model"
	"github.com/jetbpm/jetbpm/incidents"
)

// An event-based gateway parks its token on one wait per outgoing flow:
// a message wait for a message catch event or a receive task, a signal
// wait for a signal catch event, a timer wait for a timer catch event. Each wait is owned by the gateway's track and
// names the catch node (Wait.Node). The first to fire wins: the others
// close in the same step (Unsubscribe, CancelTimer), the token moves along
// the winning flow and the catch node completes at once, with the
// message's variables as its results.
//
// The subscriptions are evaluated when the gateway is entered, over the
// variables the gateway sees; a receive task after the gateway has no
// input mappings (model validation refuses them). A failed evaluation
// raises an incident on the gateway, naming the catch; nothing is opened
// until every branch evaluates.

// eventGateway enters event-based gateway g. A timer branch already due
// wins at once and nothing is opened.
func (r *runner) eventGateway(t *Track, g *model.Node) {
	out := r.p.Outgoing(g.ID)
	vars := r.visible(t)
	dues := make([]time.Time, len(out)) // zero: not a timer branch
	values := make([]string, len(out))
	for i, f := range out {
		c := r.p.Node(f.Target)
		if c.Event != model.TimerEvent {
			continue
		}
		tm, value, err := resolveTimer(c, vars)
		if err != nil {
			r.fault(t, g, incidents.CauseExpression, fmt.Sprintf("branch %q: %v", c.ID, err))
			return
		}
		due, _ := tm.Due(r.env.Now, 0)
		if !due.After(r.env.Now) {
			r.branchWon(t, c, nil)
			return
		}
		dues[i], values[i] = due, value
	}
	subs := make([]*Subscription, len(out))
	signals := make([]string, len(out))
	for i, f := range out {
		if !dues[i].IsZero() {
			continue
		}
		c := r.p.Node(f.Target)
		var err error
		if c.Event == model.SignalEvent {
			signals[i], err = r.signalName(c, vars)
		} else {
			subs[i], err = r.subscription(c, vars)
		}
		if err != nil {
			r.fault(t, g, incidents.CauseExpression, fmt.Sprintf("branch %q: %v", c.ID, err))
			return
		}
	}
	t.State = Waiting
	for i, f := range out {
		switch {
		case subs[i] != nil:
			r.subscribe(t, f.Target, t.Activation, subs[i])
			continue
		case signals[i] != "":
			r.signalSubscribe(t, f.Target, t.Activation, signals[i], false)
			continue
		}
		r.arm(&Wait{ID: r.waitID(f.Target, t.Activation), Kind: TimerWait, Track: t.ID, Node: f.Target, Due: dues[i], Armed: r.env.Now, Timer: values[i]})
	}
}

// branchWon moves t from its event-based gateway to catch node c, whose
// event came first (its own wait is already consumed): the other
// branches' waits close, and c completes at once with vars (a message's
// variables; nil for a timer).
func (r *runner) branchWon(t *Track, c *model.Node, vars map[string]any) {
	in := r.p.Incoming(c.ID)
	if len(in) != 1 {
		r.bug("catch %q after an event-based gateway has %d incoming flows", c.ID, len(in))
	}
	r.disarm(t)
	if !r.ended(t, r.p.Node(t.Node)) {
		return
	}
	if r.move(t, in[0]); t.Node == c.ID { // else a take listener failed
		r.fire(t, c, vars)
	}
}
