// Package lru is a map of bounded size that forgets the least recently
// used key first: a partition's cache of the checkpoints (or message
// entries) it last wrote. A Cache is used from one goroutine only; it has
// no lock.
package lru

import "container/list"

// Cache maps string keys to values of type V, holding at most its max.
type Cache[V any] struct {
	max   int
	order *list.List // front = most recent; values are keys
	items map[string]*list.Element
	vals  map[string]V
}

// New returns an empty cache of at most size entries (at least one).
func New[V any](size int) *Cache[V] {
	return &Cache[V]{max: max(size, 1), order: list.New(), items: map[string]*list.Element{}, vals: map[string]V{}}
}

// Get returns the value of key and whether there is one, and makes key
// the most recently used.
func (c *Cache[V]) Get(key string) (V, bool) {
	el, ok := c.items[key]
	if !ok {
		var zero V
		return zero, false
	}
	c.order.MoveToFront(el)
	return c.vals[key], true
}

// Put stores v under key as the most recently used, dropping the least
// recently used key when the cache is full.
func (c *Cache[V]) Put(key string, v V) {
	if el, ok := c.items[key]; ok {
		c.order.MoveToFront(el)
		c.vals[key] = v
		return
	}
	c.items[key] = c.order.PushFront(key)
	c.vals[key] = v
	for c.order.Len() > c.max {
		c.Drop(c.order.Back().Value.(string))
	}
}

// Drop forgets key.
func (c *Cache[V]) Drop(key string) {
	if el, ok := c.items[key]; ok {
		c.order.Remove(el)
		delete(c.items, key)
		delete(c.vals, key)
	}
}

// Len is the number of keys held.
func (c *Cache[V]) Len() int { return c.order.Len() }
