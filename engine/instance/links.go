package instance

import "github.com/jetbpm/jetbpm/engine/model"

// throwLink moves t from link throw event n to the link catch event of
// its name in its scope, which passes it on (docs/gateways.md §2).
func (r *runner) throwLink(t *Track, n *model.Node) {
	c := r.p.LinkTarget(n.ID)
	if c == nil {
		r.bug("link throw %q has no link catch", n.ID)
	}
	r.moveTo(t, c.ID, "")
}
