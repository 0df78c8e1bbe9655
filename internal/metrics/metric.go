package metrics

import (
	"math"
	"sync/atomic"
)

// value is a float64 updated atomically.
type value struct{ bits atomic.Uint64 }

func (v *value) load() float64   { return math.Float64frombits(v.bits.Load()) }
func (v *value) store(f float64) { v.bits.Store(math.Float64bits(f)) }

func (v *value) add(d float64) {
	for {
		old := v.bits.Load()
		if v.bits.CompareAndSwap(old, math.Float64bits(math.Float64frombits(old)+d)) {
			return
		}
	}
}

// Counter is a value that only goes up.
type Counter struct{ v value }

// Add adds d to the counter. A negative d is ignored: a counter never goes down.
func (c *Counter) Add(d float64) {
	if d > 0 {
		c.v.add(d)
	}
}

// Inc adds one to the counter.
func (c *Counter) Inc() { c.v.add(1) }

// Value returns the current count.
func (c *Counter) Value() float64 { return c.v.load() }

// Gauge is a value that goes up and down.
type Gauge struct{ v value }

// Set sets the gauge to f.
func (g *Gauge) Set(f float64) { g.v.store(f) }

// Add adds d (possibly negative) to the gauge.
func (g *Gauge) Add(d float64) { g.v.add(d) }

// Value returns the current value.
func (g *Gauge) Value() float64 { return g.v.load() }

// NewCounter registers a counter without labels.
func (r *Registry) NewCounter(name, help string) *Counter {
	c := &Counter{}
	r.register(single(name, help, "counter", c.Value))
	return c
}

// NewGauge registers a gauge without labels.
func (r *Registry) NewGauge(name, help string) *Gauge {
	g := &Gauge{}
	r.register(single(name, help, "gauge", g.Value))
	return g
}

// NewCounterFunc registers a counter whose value fn returns at scrape time,
// for a count kept elsewhere (a connection's reconnects). fn must be safe
// to call concurrently and should return quickly.
func (r *Registry) NewCounterFunc(name, help string, fn func() float64) {
	r.register(single(name, help, "counter", fn))
}

// NewGaugeFunc registers a gauge whose value fn returns at scrape time.
// fn must be safe to call concurrently and should return quickly.
func (r *Registry) NewGaugeFunc(name, help string, fn func() float64) {
	r.register(single(name, help, "gauge", fn))
}

func single(name, help, kind string, fn func() float64) *family {
	return &family{name: name, help: help, kind: kind,
		collect: func(emit func(float64, []string)) { emit(fn(), nil) }}
}
