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
// a cycle without a start), and when it is due; prev is when firing
// from-1 was due (zero for the first). A date fires once whenever it is
// due (from 0). A cron cycle fires at its first match after now (and
// after prev). ok is false when the timer fires no more.
func (t *Timer) NextFire(armed, prev, now time.Time, from int) (firing int, due time.Time, ok bool) {
	if t.spec.cron != nil {
		after := now
		if prev.After(after) {
			after = prev // a node whose clock lags never fires a due twice
		}
		due = t.spec.cron.Next(after)
		return from, due, !due.IsZero()
	}
	due, ok = t.Following(armed, prev, from)
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
