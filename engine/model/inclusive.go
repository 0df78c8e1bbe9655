package model

// InclusiveGateway adds a gateway that forks to every outgoing flow whose
// condition holds (a flow without one always does), else to its default
// flow. With several incoming flows it joins: it waits for a token on
// each incoming flow that a token of its scope can still reach, and
// fires once none can bring another (docs/gateways.md §1).
func (b *Builder) InclusiveGateway(id string, opts ...NodeOption) *Builder {
	return b.node(id, InclusiveGateway, NoneEvent, opts)
}

// IsInclusiveJoin reports whether node id is an inclusive gateway that
// joins: one with two or more incoming sequence flows.
func (p *Process) IsInclusiveJoin(id string) bool {
	_, ok := p.index.reach[id]
	return ok
}

// Reaches reports whether a token at node from can reach the inclusive
// join join: whether from lies on a path to join within join's scope,
// along sequence flows, from an activity through any of its boundary
// events, and from a link throw event to its catch. A join reaches
// itself only when it lies on a cycle. Reaches is false for a join that
// is not an inclusive join (IsInclusiveJoin).
func (p *Process) Reaches(from, join string) bool { return p.index.reach[join][from] }

// reachSets computes, for every inclusive join, the nodes of its scope
// from which it can be reached: a walk backwards from the join, once,
// when the process is validated, so that the step decides whether a
// token can still arrive with one set lookup.
func reachSets(p *Process, ix *index) map[string]map[string]bool {
	var reach map[string]map[string]bool
	for _, j := range p.Nodes {
		if j.Kind != InclusiveGateway || len(ix.incoming[j.ID]) < 2 {
			continue
		}
		set := map[string]bool{}
		var todo []*Node
		add := func(id string) {
			n := ix.nodes[id]
			if n == nil || n.Scope != j.Scope || set[id] {
				return
			}
			set[id] = true
			todo = append(todo, n)
		}
		add(j.ID) // removed below unless a cycle brings the walk back to it
		for len(todo) > 0 {
			n := todo[len(todo)-1]
			todo = todo[:len(todo)-1]
			for _, f := range ix.incoming[n.ID] {
				add(f.Source)
			}
			switch {
			case n.Kind == BoundaryEvent:
				add(n.AttachedTo)
			case n.Kind == IntermediateCatchEvent && n.Event == LinkEvent && ix.links.catch[linkKey{n.Scope, n.Link}] == n:
				for _, t := range ix.links.throws[linkKey{n.Scope, n.Link}] {
					add(t.ID)
				}
			}
		}
		if !onCycle(j.ID, ix, set) {
			delete(set, j.ID)
		}
		if reach == nil {
			reach = map[string]map[string]bool{}
		}
		reach[j.ID] = set
	}
	return reach
}

// onCycle reports whether join lies on a cycle: whether one of the
// nodes it leads to (a target of its outgoing flows) can reach it.
// set holds join and every node that can reach it.
func onCycle(join string, ix *index, set map[string]bool) bool {
	for _, f := range ix.outgoing[join] {
		if set[f.Target] {
			return true
		}
	}
	return false
}
