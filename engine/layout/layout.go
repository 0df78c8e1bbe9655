// Package layout draws a process that has no diagram of its own: a
// process built with the Go builder, or a BPMN file without diagram
// interchange (DI). Document returns a BPMN 2.0 document of the process —
// its nodes, flows and compensation associations with the process's ids —
// whose DI places them left to right in layers, as a modeler would:
//
//   - each scope (the process, each sub-process) is laid out on its own,
//     a sub-process drawn expanded around its contents;
//   - nodes get a layer one past their latest predecessor's (flows that
//     close a loop are left out of the count), and within a layer keep
//     the order of their predecessors;
//   - boundary events sit on their activity's lower edge, a compensation
//     handler right of its activity, event sub-processes in a row below
//     their scope's flow;
//   - flows are drawn with right angles; one that goes back runs below.
//
// The result is for viewing (the console draws it with bpmn-js): it
// carries the elements' kinds, event definitions, names and
// multi-instance markers, not their execution details. The package is
// pure: the model in, bytes out.
package layout

import (
	"slices"

	"github.com/jetbpm/jetbpm/engine/model"
)

// box is a shape's bounds.
type box struct{ x, y, w, h float64 }

func (b box) cx() float64     { return b.x + b.w/2 }
func (b box) cy() float64     { return b.y + b.h/2 }
func (b box) right() float64  { return b.x + b.w }
func (b box) bottom() float64 { return b.y + b.h }

// point is a waypoint of an edge.
type point struct{ x, y float64 }

// Sizes and gaps, in the units bpmn-js draws with.
const (
	eventSize   = 36
	gatewaySize = 50
	taskW       = 100
	taskH       = 80
	layerGap    = 60  // between layers
	rowGap      = 50  // between nodes of a layer
	padX        = 30  // inside a sub-process, left and right
	padTop      = 40  // inside a sub-process, above its contents
	padBottom   = 30  // inside a sub-process, below its contents
	boundaryRow = 30  // room below an activity with boundary events: their flows leave through it
	espGap      = 50  // above the row of event sub-processes
	margin      = 150 // the diagram's offset from the origin
)

// diagram holds a process's laid-out shapes.
type diagram struct {
	p      *model.Process
	nodes  map[string]*model.Node
	bounds map[string][]*model.Node // boundary events by activity
	rel    map[string]box           // each node's box, relative to its scope's origin
	boxes  map[string]box           // absolute, once placed
}

// place lays out p.
func place(p *model.Process) *diagram {
	d := &diagram{p: p, nodes: map[string]*model.Node{}, bounds: map[string][]*model.Node{}, rel: map[string]box{}, boxes: map[string]box{}}
	for _, n := range p.Nodes {
		d.nodes[n.ID] = n
		if n.Kind == model.BoundaryEvent {
			d.bounds[n.AttachedTo] = append(d.bounds[n.AttachedTo], n)
		}
	}
	d.scope("")
	d.absolute("", point{margin, margin})
	return d
}

// members returns the nodes laid out in scope: all but boundary events,
// in declaration order, event sub-processes last.
func (d *diagram) members(scope string) (flow, esps []*model.Node) {
	for _, n := range d.p.Nodes {
		switch {
		case n.Scope != scope || n.Kind == model.BoundaryEvent:
		case n.TriggeredByEvent:
			esps = append(esps, n)
		default:
			flow = append(flow, n)
		}
	}
	return flow, esps
}

// size returns n's width and height; a sub-process is laid out first.
func (d *diagram) size(n *model.Node) (w, h float64) {
	switch {
	case n.Kind == model.SubProcess:
		w, h = d.scope(n.ID)
		return max(w+2*padX, 2*taskW), max(h+padTop+padBottom, taskH+padTop)
	case n.Kind.IsActivity():
		return taskW, taskH
	case n.Kind == model.ExclusiveGateway, n.Kind == model.ParallelGateway, n.Kind == model.InclusiveGateway, n.Kind == model.EventBasedGateway:
		return gatewaySize, gatewaySize
	}
	return eventSize, eventSize
}

// scope lays out the contents of scope relative to its origin and returns
// their width and height.
func (d *diagram) scope(scope string) (w, h float64) {
	flow, esps := d.members(scope)
	in := map[string]bool{}
	for _, n := range flow {
		in[n.ID] = true
	}
	// The graph: flows between members (a boundary event's flow counts
	// as its activity's), and compensation handlers after their activity.
	succ := map[string][]string{}
	edge := func(from, to string) {
		if in[from] && in[to] && from != to && !slices.Contains(succ[from], to) {
			succ[from] = append(succ[from], to)
		}
	}
	for _, f := range d.p.Flows {
		edge(d.host(f.Source), f.Target)
	}
	for _, n := range d.p.Nodes {
		if n.Kind == model.BoundaryEvent && n.Event == model.CompensateEvent && n.Handler != "" {
			edge(n.AttachedTo, n.Handler)
		}
	}
	layers := layering(flow, succ)

	// Columns: nodes of a layer stacked, each column centred on the
	// tallest.
	sizes := map[string]box{}
	colW := make([]float64, len(layers))
	colH := make([]float64, len(layers))
	for i, layer := range layers {
		for j, id := range layer {
			n := d.nodes[id]
			bw, bh := d.size(n)
			sizes[id] = box{w: bw, h: bh}
			colW[i] = max(colW[i], bw)
			if j > 0 {
				colH[i] += rowGap
			}
			colH[i] += bh
			if len(d.bounds[id]) > 0 {
				colH[i] += boundaryRow
			}
		}
	}
	tallest := 0.0
	for _, ch := range colH {
		tallest = max(tallest, ch)
	}
	x := 0.0
	for i, layer := range layers {
		y := (tallest - colH[i]) / 2
		for _, id := range layer {
			b := sizes[id]
			b.x, b.y = x+(colW[i]-b.w)/2, y
			d.rel[id] = b
			y += b.h + rowGap
			if len(d.bounds[id]) > 0 {
				y += boundaryRow
			}
		}
		x += colW[i] + layerGap
	}
	w, h = max(x-layerGap, 0), tallest

	// Event sub-processes: a row below.
	if len(esps) > 0 {
		y, ex, rowH := h+espGap, 0.0, 0.0
		for _, n := range esps {
			bw, bh := d.size(n)
			d.rel[n.ID] = box{ex, y, bw, bh}
			ex += bw + layerGap
			rowH = max(rowH, bh)
		}
		w, h = max(w, ex-layerGap), y+rowH
	}
	return w, h
}

// host returns the activity a boundary event id is attached to, or id.
func (d *diagram) host(id string) string {
	if n := d.nodes[id]; n != nil && n.Kind == model.BoundaryEvent {
		return n.AttachedTo
	}
	return id
}

// absolute places the nodes of scope, whose contents start at origin, and
// their boundary events.
func (d *diagram) absolute(scope string, origin point) {
	flow, esps := d.members(scope)
	for _, n := range append(flow, esps...) {
		b := d.rel[n.ID]
		b.x, b.y = b.x+origin.x, b.y+origin.y
		d.boxes[n.ID] = b
		if n.Kind == model.SubProcess {
			d.absolute(n.ID, point{b.x + padX, b.y + padTop})
		}
		for i, be := range d.bounds[n.ID] {
			bx := b.right() - eventSize - 14 - float64(i)*(eventSize+8)
			if bx < b.x {
				bx = b.x
			}
			d.boxes[be.ID] = box{bx, b.bottom() - eventSize/2, eventSize, eventSize}
		}
	}
}

// layering assigns nodes to layers by longest path over succ, leaving out
// the flows a depth-first walk finds closing a loop; a layer keeps its
// nodes in the order of their first predecessor's position, then of
// declaration.
func layering(nodes []*model.Node, succ map[string][]string) [][]string {
	order := map[string]int{}
	for i, n := range nodes {
		order[n.ID] = i
	}
	pred := map[string]int{}
	for _, ts := range succ {
		for _, t := range ts {
			pred[t]++
		}
	}
	// Back edges: found by a depth-first walk from the nodes nothing
	// leads to, then from any not yet reached.
	back := map[[2]string]bool{}
	state := map[string]int{} // 0 new, 1 on the path, 2 done
	var visit func(string)
	visit = func(id string) {
		state[id] = 1
		for _, t := range succ[id] {
			switch state[t] {
			case 0:
				visit(t)
			case 1:
				back[[2]string{id, t}] = true
			}
		}
		state[id] = 2
	}
	for _, n := range nodes {
		if pred[n.ID] == 0 && state[n.ID] == 0 {
			visit(n.ID)
		}
	}
	for _, n := range nodes {
		if state[n.ID] == 0 {
			visit(n.ID)
		}
	}
	// Longest path over the forward edges, in topological order.
	indeg := map[string]int{}
	for from, ts := range succ {
		for _, t := range ts {
			if !back[[2]string{from, t}] {
				indeg[t]++
			}
		}
	}
	rank := map[string]int{}
	var queue []string
	for _, n := range nodes {
		if indeg[n.ID] == 0 {
			queue = append(queue, n.ID)
		}
	}
	for len(queue) > 0 {
		id := queue[0]
		queue = queue[1:]
		for _, t := range succ[id] {
			if back[[2]string{id, t}] {
				continue
			}
			rank[t] = max(rank[t], rank[id]+1)
			if indeg[t]--; indeg[t] == 0 {
				queue = append(queue, t)
			}
		}
	}
	top := 0
	for _, r := range rank {
		top = max(top, r)
	}
	layers := make([][]string, top+1)
	for _, n := range nodes {
		layers[rank[n.ID]] = append(layers[rank[n.ID]], n.ID)
	}
	// Order each layer by where its nodes' predecessors stand.
	pos := map[string]int{}
	for i, layer := range layers {
		key := map[string]float64{}
		for _, id := range layer {
			key[id] = float64(len(nodes) + order[id])
		}
		if i > 0 {
			for from, ts := range succ {
				p, ok := pos[from]
				if !ok || rank[from] >= i {
					continue
				}
				for _, t := range ts {
					if _, here := key[t]; here && float64(p) < key[t] {
						key[t] = float64(p)
					}
				}
			}
		}
		slices.SortStableFunc(layer, func(a, b string) int {
			switch {
			case key[a] < key[b]:
				return -1
			case key[a] > key[b]:
				return 1
			}
			return order[a] - order[b]
		})
		for j, id := range layer {
			pos[id] = j
		}
	}
	return layers
}

// waypoints routes flow from to to with right angles.
func (d *diagram) waypoints(from, to string) []point {
	s, t := d.boxes[from], d.boxes[to]
	if n := d.nodes[from]; n != nil && n.Kind == model.BoundaryEvent {
		// Down into the room kept below the activity, then along it into
		// the gap right of the activity, then to the target.
		start, below := point{s.cx(), s.bottom()}, s.bottom()+8
		if host := d.boxes[n.AttachedTo]; t.x > host.right() {
			mx := host.right() + layerGap/3 // beside the flows' elbows, at half the gap
			return []point{start, {s.cx(), below}, {mx, below}, {mx, t.cy()}, {t.x, t.cy()}}
		}
		low := max(s.bottom(), t.bottom()) + 25
		return []point{start, {s.cx(), low}, {t.cx(), low}, {t.cx(), t.bottom()}}
	}
	sx, sy, tx, ty := s.right(), s.cy(), t.x, t.cy()
	switch {
	case tx > sx && sy == ty:
		return []point{{sx, sy}, {tx, ty}}
	case tx > sx:
		mx := sx + (tx-sx)/2
		return []point{{sx, sy}, {mx, sy}, {mx, ty}, {tx, ty}}
	}
	low := max(s.bottom(), t.bottom()) + 25
	return []point{{s.cx(), s.bottom()}, {s.cx(), low}, {t.cx(), low}, {t.cx(), t.bottom()}}
}
