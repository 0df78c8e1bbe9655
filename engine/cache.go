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

// lru is a bounded map of checkpoints. Each partition owns one and uses it
// from its own goroutine only, so it needs no lock.
type lru struct {
	max   int
	order *list.List // front = most recent; values are ids
	items map[string]*list.Element
	vals  map[string]cached
}

func newLRU(max int) *lru {
	return &lru{max: max, order: list.New(), items: map[string]*list.Element{}, vals: map[string]cached{}}
}

func (c *lru) get(id string) (cached, bool) {
	el, ok := c.items[id]
	if !ok {
		return cached{}, false
	}
	c.order.MoveToFront(el)
	return c.vals[id], true
}

func (c *lru) put(id string, v cached) {
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

func (c *lru) drop(id string) {
	if el, ok := c.items[id]; ok {
		c.order.Remove(el)
		delete(c.items, id)
		delete(c.vals, id)
	}
}
