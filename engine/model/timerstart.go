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
