package model

import "time"

// TimerStarts returns the process-level timer start events, in
// declaration order (docs/timerstart.md).
func (p *Process) TimerStarts() []*Node {
	var out []*Node
	for _, n := range p.Nodes {
		if n.Kind == StartEvent && n.Event == TimerEvent && n.Scope == "" {
			out = append(out, n)
		}
	}
	return out
}

// timerStart checks a timer start event: at process level, a date or a
// cycle (a duration has nothing to count from), at most one per process.
func (v *validator) timerStart(n *Node) {
	v.timer(n)
	switch {
	case n.Scope != "":
		v.nodef(n, "timer start events are supported at process level only")
	case n.Timer != nil && n.Timer.Type == TimerDuration:
		v.nodef(n, "a timer start event has a timeDate or a timeCycle, not a timeDuration")
	}
	if starts := v.p.TimerStarts(); len(starts) > 1 && starts[0] != n {
		v.nodef(n, "a process has one timer start event; %q is already one", starts[0].ID)
	}
}

// TimerStartEvent adds a process-level start event that starts an
// instance when timer t fires: a date (once) or a cycle.
func (b *Builder) TimerStartEvent(id string, t Timer, opts ...NodeOption) *Builder {
	return b.node(id, StartEvent, TimerEvent, append([]NodeOption{func(n *Node) { n.Timer = &t }}, opts...))
}

// NextFire returns the first firing, from firing from on, of a timer
// start event that is due after now, counting from armed (the deploy, for
// a cycle without a start), and when it is due. A date fires once
// whenever it is due (from 0). ok is false when the timer fires no more.
func (t *Timer) NextFire(armed, now time.Time, from int) (firing int, due time.Time, ok bool) {
	due, ok = t.Due(armed, from)
	if !ok || t.Type != TimerCycle {
		return from, due, ok
	}
	for firing = from; !due.After(now); {
		firing++
		if t.spec.repeats >= 0 && firing >= t.spec.repeats {
			return firing, time.Time{}, false
		}
		due = t.spec.period.AddTo(due)
	}
	return firing, due, true
}
