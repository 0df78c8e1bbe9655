package model

// Link events are a goto drawn as two events: a link throw event moves
// its token to the link catch event of the same name in the same scope,
// which passes it on along its outgoing flows. No sequence flow enters a
// catch or leaves a throw; several throws may lead to one catch
// (docs/gateways.md §2).

// LinkThrowEvent adds an intermediate throw event that moves its token to
// the link catch event called name in the same scope.
func (b *Builder) LinkThrowEvent(id, name string, opts ...NodeOption) *Builder {
	return b.node(id, IntermediateThrowEvent, LinkEvent, append([]NodeOption{func(n *Node) { n.Link = name }}, opts...))
}

// LinkCatchEvent adds an intermediate catch event that the link throw
// events called name in the same scope lead to.
func (b *Builder) LinkCatchEvent(id, name string, opts ...NodeOption) *Builder {
	return b.node(id, IntermediateCatchEvent, LinkEvent, append([]NodeOption{func(n *Node) { n.Link = name }}, opts...))
}

// LinkTarget returns the link catch event link throw event id leads to,
// nil when id is not a link throw event.
func (p *Process) LinkTarget(id string) *Node {
	n := p.Node(id)
	if n == nil || n.Kind != IntermediateThrowEvent || n.Event != LinkEvent {
		return nil
	}
	return p.index.links.catch[linkKey{n.Scope, n.Link}]
}

type linkKey struct{ scope, name string }

// links indexes the link events of a process: the first catch of each
// name in each scope (validation refuses a second), and every throw.
type links struct {
	catch  map[linkKey]*Node
	throws map[linkKey][]*Node
}

func newLinks(p *Process) links {
	l := links{catch: map[linkKey]*Node{}, throws: map[linkKey][]*Node{}}
	for _, n := range p.Nodes {
		if n.Event != LinkEvent {
			continue
		}
		k := linkKey{n.Scope, n.Link}
		switch n.Kind {
		case IntermediateCatchEvent:
			if l.catch[k] == nil {
				l.catch[k] = n
			}
		case IntermediateThrowEvent:
			l.throws[k] = append(l.throws[k], n)
		}
	}
	return l
}

// link checks a link throw or catch event: a name; a throw leads to a
// catch of its scope and has no outgoing flow; a catch is the only one
// of its name in its scope and has no incoming flow.
func (v *validator) link(n *Node) {
	if n.Link == "" {
		v.nodef(n, "a link event needs a name")
		return
	}
	catch := v.p.index.links.catch[linkKey{n.Scope, n.Link}]
	if n.Kind == IntermediateThrowEvent {
		if catch == nil {
			v.nodef(n, "link %q has no link catch event in the same scope", n.Link)
		}
		if len(v.p.Outgoing(n.ID)) > 0 {
			v.nodef(n, "a link throw event has no outgoing sequence flows: its token goes on at the link catch event %q", n.Link)
		}
		return
	}
	if catch != n {
		v.nodef(n, "link %q already has the link catch event %q in this scope", n.Link, catch.ID)
	}
	if len(v.p.Incoming(n.ID)) > 0 {
		v.nodef(n, "a link catch event is reached by its link throw events only, not by sequence flows")
	}
}
