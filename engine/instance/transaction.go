package instance

import "github.com/jetbpm/jetbpm/engine/model"

// A transaction is a sub-process (model.Node.Transaction) that a cancel
// end event inside it can cancel, as in Camunda 7: the token that reached
// the cancel end event stays while every other token of the transaction
// is cancelled and its event sub-processes close; then the transaction's
// completed activities are compensated as by a compensation end event
// (the journal's completions of the transaction's scope, newest first,
// one handler at a time); once the last handler ends the transaction is
// interrupted and the token leaves by its cancel boundary event. A
// handler that fails raises its incident as any compensation handler's
// does; the cancel waits for the operator.

// cancelTransaction runs cancel end event n, reached by t.
func (r *runner) cancelTransaction(t *Track, n *model.Node) {
	sc := r.s.scope(t.Scope)
	if sc == nil || sc.Owner == "" {
		r.bug("cancel end event %q outside a transaction's scope", n.ID)
	}
	for _, x := range r.tracksIn(sc.ID) {
		if x != t {
			r.cancelTrack(x)
		}
	}
	r.closeEventSubs(sc.ID)
	sc.Interrupted = true
	r.throwCompensation(t, n) // on to transactionCancelled when done
}

// transactionCancelled leaves t's transaction by its cancel boundary
// event: the compensation of its cancel is done.
func (r *runner) transactionCancelled(t *Track) {
	sc := r.s.scope(t.Scope)
	if sc == nil {
		r.bug("cancelled transaction's scope %q vanished", t.Scope)
	}
	owner := r.s.track(sc.Owner)
	if owner == nil {
		r.bug("transaction scope %q has no owner track %q", sc.ID, sc.Owner)
	}
	b := r.p.CancelBoundaryOf(owner.Node)
	if b == nil {
		r.bug("transaction %q has no cancel boundary", owner.Node)
	}
	r.fire(r.interrupt(owner, b), b, nil)
}
