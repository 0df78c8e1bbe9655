package model

// index holds the lookups the engine needs on every step; Validate builds it.
type index struct {
	nodes      map[string]*Node
	flows      map[string]*Flow
	outgoing   map[string][]*Flow
	incoming   map[string][]*Flow
	start      map[string]*Node   // scope id -> its none start event
	boundaries map[string][]*Node // activity id -> attached boundary events
	msgStarts  []*Node            // the process's message start events
	links      links              // link catch and throw events by scope and name
	eventSubs  eventSubs          // event sub-process start events by scope
	// compensation maps an activity to its compensation handler: the
	// associated activity of its compensation boundary event, or for a
	// sub-process its compensation event sub-process (compensation.go).
	compensation map[string]*Node
	// reach maps each inclusive join to the nodes of its scope from
	// which it can be reached (inclusive.go).
	reach map[string]map[string]bool
}

func newIndex(p *Process) *index {
	ix := &index{
		nodes:      make(map[string]*Node, len(p.Nodes)),
		flows:      make(map[string]*Flow, len(p.Flows)),
		outgoing:   make(map[string][]*Flow),
		incoming:   make(map[string][]*Flow),
		start:      make(map[string]*Node),
		boundaries: make(map[string][]*Node),
	}
	for _, n := range p.Nodes {
		ix.nodes[n.ID] = n
		if n.Kind == BoundaryEvent {
			ix.boundaries[n.AttachedTo] = append(ix.boundaries[n.AttachedTo], n)
		}
		if n.Kind == StartEvent && n.Event == MessageEvent && n.Scope == "" {
			ix.msgStarts = append(ix.msgStarts, n)
		}
		if n.Kind == StartEvent && n.Event == NoneEvent {
			if _, dup := ix.start[n.Scope]; !dup {
				ix.start[n.Scope] = n
			}
		}
	}
	for _, f := range p.Flows {
		ix.flows[f.ID] = f
		ix.outgoing[f.Source] = append(ix.outgoing[f.Source], f)
		ix.incoming[f.Target] = append(ix.incoming[f.Target], f)
	}
	ix.links = newLinks(p)
	ix.eventSubs = newEventSubs(p)
	ix.compensation = compensationHandlers(p, ix)
	ix.reach = reachSets(p, ix)
	return ix
}

// Node returns the node with the given id, or nil.
func (p *Process) Node(id string) *Node { return p.index.nodes[id] }

// Flow returns the sequence flow with the given id, or nil.
func (p *Process) Flow(id string) *Flow { return p.index.flows[id] }

// Outgoing returns the flows leaving node id, in declaration order.
func (p *Process) Outgoing(id string) []*Flow { return p.index.outgoing[id] }

// Incoming returns the flows entering node id, in declaration order.
func (p *Process) Incoming(id string) []*Flow { return p.index.incoming[id] }

// StartOf returns the none start event of a scope ("" for the process, or a
// sub-process id).
func (p *Process) StartOf(scope string) *Node { return p.index.start[scope] }

// MessageStarts returns the process-level message start events, in
// declaration order.
func (p *Process) MessageStarts() []*Node { return p.index.msgStarts }

// Boundaries returns the boundary events attached to activity id.
func (p *Process) Boundaries(id string) []*Node { return p.index.boundaries[id] }

// Validated reports whether p passed Validate and can be executed.
func (p *Process) Validated() bool { return p.index != nil }
