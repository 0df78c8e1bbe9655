package engine

import (
	"container/list"

	"github.com/jetbpm/jetbpm/engine/instance"
)

// cached is a checkpoint as last written by this node.
type cached struct {
	state *instance.State
	rev   uint64
}

// lru is a bounded map of checkpoints (or, for a message partition, of
// entries). Each partition owns one and uses it from its own goroutine
// only, so it needs no lock.
type lru[V any] struct {
	max   int
	order *list.List // front = most recent; values are ids
	items map[string]*list.Element
	vals  map[string]V
}

func newLRU[V any](max int) *lru[V] {
	return &lru[V]{max: max, order: list.New(), items: map[string]*list.Element{}, vals: map[string]V{}}
}

func (c *lru[V]) get(id string) (V, bool) {
	el, ok := c.items[id]
	if !ok {
		var zero V
		return zero, false
	}
	c.order.MoveToFront(el)
	return c.vals[id], true
}

func (c *lru[V]) put(id string, v V) {
	if el, ok := c.items[id]; ok {
		c.order.MoveToFront(el)
		c.vals[id] = v
		return
	}
	c.items[id] = c.order.PushFront(id)
	c.vals[id] = v
	for c.order.Len() > c.max {
		old := c.order.Back()
		c.drop(old.Value.(string))
	}
}

func (c *lru[V]) drop(id string) {
	if el, ok := c.items[id]; ok {
		c.order.Remove(el)
		delete(c.items, id)
		delete(c.vals, id)
	}
}
