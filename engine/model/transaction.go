package model

// CancelEvent is the event definition of a transaction's cancel end event
// and of the cancel boundary event on the transaction. Reaching the cancel
// end event cancels the transaction: its other tokens are cancelled, its
// completed activities compensated (newest first, as a compensation
// throw does), and the token leaves by the cancel boundary
// (docs/compensation.md §5).
const CancelEvent EventType = "cancel"

// Transaction adds a transaction sub-process and returns a builder for its
// contents, as SubProcess does.
func (b *Builder) Transaction(id string, opts ...NodeOption) *Builder {
	return b.SubProcess(id, append([]NodeOption{func(n *Node) { n.Transaction = true }}, opts...)...)
}

// CancelEndEvent adds a cancel end event; it belongs directly in a
// transaction.
func (b *Builder) CancelEndEvent(id string, opts ...NodeOption) *Builder {
	return b.node(id, EndEvent, CancelEvent, opts)
}

// CancelBoundary attaches the cancel boundary event to transaction: the
// way out when the transaction is cancelled.
func (b *Builder) CancelBoundary(id, transaction string, opts ...NodeOption) *Builder {
	return b.node(id, BoundaryEvent, CancelEvent, append([]NodeOption{func(n *Node) {
		n.AttachedTo, n.Interrupting = transaction, true
	}}, opts...))
}

// CancelBoundaryOf returns the cancel boundary event of transaction id,
// nil if it has none.
func (p *Process) CancelBoundaryOf(id string) *Node {
	for _, b := range p.Boundaries(id) {
		if b.Event == CancelEvent {
			return b
		}
	}
	return nil
}

// cancelEnd checks a cancel end event: directly in a transaction that is
// not multi-instance and has a cancel boundary.
func (v *validator) cancelEnd(n *Node) {
	tx := v.p.Node(n.Scope)
	switch {
	case tx == nil || !tx.Transaction:
		v.nodef(n, "a cancel end event belongs directly in a transaction")
	case tx.Loop != nil:
		v.nodef(n, "a cancel end event in multi-instance transaction %q is not supported", tx.ID)
	case v.p.CancelBoundaryOf(tx.ID) == nil:
		v.nodef(n, "transaction %q has no cancel boundary event for a cancel to leave by", tx.ID)
	}
}

// cancelBoundary checks a cancel boundary event: interrupting, the only one
// on a transaction.
func (v *validator) cancelBoundary(n *Node) {
	host := v.p.Node(n.AttachedTo)
	switch {
	case host == nil:
		return // boundary reports it
	case !host.Transaction:
		v.nodef(n, "a cancel boundary event attaches to a transaction; %q is not one", host.ID)
	case !n.Interrupting:
		v.nodef(n, "cancel boundary events are always interrupting")
	case v.p.CancelBoundaryOf(host.ID) != n:
		v.nodef(n, "transaction %q has two cancel boundary events", host.ID)
	}
}
