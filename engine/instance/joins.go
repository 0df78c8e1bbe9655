package instance

import (
	"slices"
	"time"
)

// A parallel join fires once a token has arrived on each of its incoming
// flows; an inclusive join also when no other token of its scope can reach
// it (inclusive.go), and a token waiting at another join that reaches it
// counts as one that can. When every token left in a scope waits at a
// join, none of them can move again, so none can bring the tokens still
// missing: the joins can never fire and the scope can never complete on
// its own. That is how
// an abandoned branch strands its siblings (its token will never arrive),
// and how a model that feeds a parallel join from an exclusive split
// deadlocks. Only something outside the scope can end it: an interrupting
// boundary of the sub-process that owns it, a terminate end event above
// it, or cancelling the instance (docs/incidents.md §7).

// StuckJoin is a parallel or inclusive join that can never fire.
type StuckJoin struct {
	Node string `msgpack:"node" json:"nodeId"`
	// Scope is the variable scope of the join's tokens (root, or a
	// sub-process activation).
	Scope string `msgpack:"scope" json:"scope"`
	// Arrived are the incoming flows a token waits on; Missing the ones
	// no token can take any more.
	Arrived []string `msgpack:"arrived" json:"arrived"`
	Missing []string `msgpack:"missing" json:"missing"`
	// Abandoned are the incidents abandoned in the scope: their tokens
	// will never arrive.
	Abandoned []string `msgpack:"abandoned,omitempty" json:"abandonedIncidents,omitempty"`
	// Since is when the step that stranded the join ran.
	Since time.Time `msgpack:"since" json:"since"`
}

// stuckJoins returns the joins of the scopes whose every track is joining,
// in track order. A join already stuck keeps its Since.
func (r *runner) stuckJoins() []StuckJoin {
	var scopes []string
	joining := map[string][]*Track{}
	moving := map[string]bool{}
	for _, t := range r.s.Tracks {
		if t.State != Joining {
			moving[t.Scope] = true
			continue
		}
		if joining[t.Scope] == nil {
			scopes = append(scopes, t.Scope)
		}
		joining[t.Scope] = append(joining[t.Scope], t)
	}
	var out []StuckJoin
	for _, scope := range scopes {
		if moving[scope] {
			continue
		}
		var abandoned []string
		if sc := r.s.scope(scope); sc != nil {
			abandoned = slices.Clone(sc.Abandoned)
		}
		var nodes []string
		for _, t := range joining[scope] {
			if !slices.Contains(nodes, t.Node) {
				nodes = append(nodes, t.Node)
			}
		}
		for _, node := range nodes {
			j := StuckJoin{Node: node, Scope: scope, Abandoned: abandoned, Since: r.env.Now}
			for _, t := range joining[scope] {
				if t.Node == node && !slices.Contains(j.Arrived, t.Flow) {
					j.Arrived = append(j.Arrived, t.Flow)
				}
			}
			slices.Sort(j.Arrived)
			for _, f := range r.p.Incoming(node) {
				if !slices.Contains(j.Arrived, f.ID) {
					j.Missing = append(j.Missing, f.ID)
				}
			}
			for _, old := range r.s.Stuck {
				if old.Node == node && old.Scope == scope {
					j.Since = old.Since
				}
			}
			out = append(out, j)
		}
	}
	return out
}
