package instance

import (
	"fmt"

	"github.com/jetbpm/jetbpm/engine/model"
)

// An inclusive gateway forks to every outgoing flow whose condition
// holds, else to its default flow. With several incoming flows it first
// joins (docs/gateways.md §1): a token arriving there waits (state
// joining, remembering its flow), and the join fires when a token waits
// on every incoming flow or when no other token of its scope can reach
// it any more — the model's reach set of the join (model.Process.Reaches)
// tells, for each token's node, whether it still can.
//
// The join is decided when a token arrives and again whenever the step
// has nothing left to run (fireableJoin): a branch that disappears
// without arriving (it ended, left by a boundary, was terminated, its
// incident abandoned) lets the join fire in the step that removed it.
// A firing takes the first token of each incoming flow; more tokens of
// one flow wait for the next firing.

// inclusive runs inclusive gateway n for t: the join, when n joins and t
// arrived by a flow, then the fork. A track at n with no flow is a retry
// of the fork's incident: it has joined already.
func (r *runner) inclusive(t *Track, n *model.Node) {
	if r.p.IsInclusiveJoin(n.ID) && t.Flow != "" {
		t.State = Joining
		tokens := r.joinable(n, t.Scope)
		if tokens == nil {
			return // keep waiting
		}
		for _, o := range tokens[1:] {
			r.s.removeTrack(o.ID)
		}
		t = tokens[0]
		// It arrived by several flows: a retry of the fork's incident
		// (a track at n without flow) must not join again.
		t.Flow = ""
		if r.listenFrom(t, n, model.ListenStart, 0) {
			return // joined: its Zeebe start listeners run once, now
		}
	}
	if taken := r.holding(t, n, fmt.Sprintf("inclusive gateway %q: no condition holds and there is no default flow", n.ID)); taken != nil && r.ended(t, n) {
		r.take(t, taken)
	}
}

// joinable decides inclusive join j in scope: it returns the tokens a
// firing consumes now — the first joining token of each incoming flow
// that has one, in track order — or nil while j must wait.
func (r *runner) joinable(j *model.Node, scope string) []*Track {
	first := map[string]*Track{}
	blocked := false
	for _, o := range r.s.Tracks {
		switch {
		case o.Scope != scope:
		case o.Node == j.ID && o.State == Joining:
			if first[o.Flow] == nil {
				first[o.Flow] = o
			}
		case !blocked:
			blocked = r.canArrive(o, j)
		}
	}
	if blocked {
		for _, f := range r.p.Incoming(j.ID) {
			if first[f.ID] == nil {
				return nil
			}
		}
	}
	var tokens []*Track
	for _, o := range r.s.Tracks {
		if o.Scope == scope && first[o.Flow] == o && o.Node == j.ID {
			tokens = append(tokens, o)
		}
	}
	return tokens
}

// canArrive reports whether track o can still bring a token to join j
// of its scope. A track on j that has not joined yet is about to; one
// there that joined already (the fork's incident, or its retry) can come
// back only if j lies on a cycle.
func (r *runner) canArrive(o *Track, j *model.Node) bool {
	if o.Node == j.ID && o.State == Ready && o.Flow != "" {
		return true
	}
	return r.p.Reaches(o.Node, j.ID)
}

// fireableJoin returns a token waiting at an inclusive join that can
// fire now, nil when there is none. The step asks when no track is
// ready; executing the token fires the join.
func (r *runner) fireableJoin() *Track {
	type at struct{ node, scope string }
	var seen map[at]bool
	for _, t := range r.s.Tracks {
		if t.State != Joining || !r.p.IsInclusiveJoin(t.Node) || seen[at{t.Node, t.Scope}] {
			continue
		}
		if r.joinable(r.p.Node(t.Node), t.Scope) != nil {
			return t
		}
		if seen == nil {
			seen = map[at]bool{}
		}
		seen[at{t.Node, t.Scope}] = true
	}
	return nil
}
