package lru

import "testing"

func TestCacheForgetsTheLeastRecentlyUsed(t *testing.T) {
	t.Parallel()
	c := New[int](2)
	c.Put("a", 1)
	c.Put("b", 2)
	if v, ok := c.Get("a"); !ok || v != 1 { // a is now the most recent
		t.Fatalf("a = %v %v", v, ok)
	}
	c.Put("c", 3) // drops b
	if _, ok := c.Get("b"); ok {
		t.Fatal("b survived, though it was the least recently used")
	}
	if v, ok := c.Get("a"); !ok || v != 1 {
		t.Fatalf("a = %v %v, want 1", v, ok)
	}
	c.Put("a", 10)
	if v, _ := c.Get("a"); v != 10 || c.Len() != 2 {
		t.Fatalf("a = %v, len %d; want 10, 2", v, c.Len())
	}
	c.Drop("a")
	c.Drop("nothing")
	if _, ok := c.Get("a"); ok || c.Len() != 1 {
		t.Fatalf("after Drop: len %d", c.Len())
	}
}

func TestCacheOfZeroHoldsOne(t *testing.T) {
	t.Parallel()
	c := New[string](0)
	c.Put("x", "y")
	if v, ok := c.Get("x"); !ok || v != "y" {
		t.Fatalf("x = %q %v", v, ok)
	}
}
