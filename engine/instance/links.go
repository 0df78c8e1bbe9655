package instance

import "github.com/jetbpm/jetbpm/engine/model"

// throwLink moves t from link throw event n to the link catch event of
// its name in its scope, which passes it on (docs/gateways.md §2).
func (r *runner) throwLink(t *Track, n *model.Node) {
	c := r.p.LinkTarget(n.ID)
	if c == nil {
		r.bug("link throw %q has no link catch", n.ID)
	}
	if len(n.Inputs) > 0 || len(n.Outputs) > 0 {
		// Its mappings run before the jump, as a none throw's do.
		locals := t.Locals // its inputs, evaluated as it was entered
		names, values, ok := r.outputs(t, n, locals, nil)
		if !ok {
			return
		}
		for _, k := range names {
			r.storeVar(t.Scope, k, values[k])
		}
	}
	r.moveTo(t, c.ID, "")
}
