package metrics

import (
	"fmt"
	"strings"
	"sync"
)

// vec holds one series per combination of label values.
type vec[M any] struct {
	name   string
	labels []string
	mu     sync.RWMutex
	series map[string]*M
	values map[string][]string
}

func newVec[M any](name string, labels []string) *vec[M] {
	return &vec[M]{name: name, labels: labels, series: make(map[string]*M), values: make(map[string][]string)}
}

func (v *vec[M]) with(values []string) *M {
	if len(values) != len(v.labels) {
		panic(fmt.Sprintf("metrics: %s takes %d label values (%s), got %d",
			v.name, len(v.labels), strings.Join(v.labels, ", "), len(values)))
	}
	key := strings.Join(values, "\xff")
	v.mu.RLock()
	m, ok := v.series[key]
	v.mu.RUnlock()
	if ok {
		return m
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if m, ok := v.series[key]; ok {
		return m
	}
	m = new(M)
	v.series[key] = m
	v.values[key] = append([]string(nil), values...)
	return m
}

func (v *vec[M]) collect(read func(*M) float64) func(emit func(float64, []string)) {
	return func(emit func(float64, []string)) {
		v.mu.RLock()
		defer v.mu.RUnlock()
		for key, m := range v.series {
			emit(read(m), v.values[key])
		}
	}
}

// CounterVec is a counter with labels: one Counter per combination of values.
type CounterVec struct{ v *vec[Counter] }

// With returns the counter for the label values, given in the order of the
// label names the vec was registered with.
func (c *CounterVec) With(values ...string) *Counter { return c.v.with(values) }

// GaugeVec is a gauge with labels: one Gauge per combination of values.
type GaugeVec struct{ v *vec[Gauge] }

// With returns the gauge for the label values, given in the order of the
// label names the vec was registered with.
func (g *GaugeVec) With(values ...string) *Gauge { return g.v.with(values) }

// NewCounterVec registers a counter family with the given label names.
func (r *Registry) NewCounterVec(name, help string, labels ...string) *CounterVec {
	v := newVec[Counter](name, labels)
	r.register(&family{name: name, help: help, kind: "counter", labels: labels,
		collect: v.collect((*Counter).Value)})
	return &CounterVec{v: v}
}

// NewGaugeVec registers a gauge family with the given label names.
func (r *Registry) NewGaugeVec(name, help string, labels ...string) *GaugeVec {
	v := newVec[Gauge](name, labels)
	r.register(&family{name: name, help: help, kind: "gauge", labels: labels,
		collect: v.collect((*Gauge).Value)})
	return &GaugeVec{v: v}
}

// NewGaugeVecFunc registers a labelled gauge family computed at scrape
// time: fn calls emit once per series, with one value per label name (a
// queue depth per topic). fn must be safe to call concurrently.
func (r *Registry) NewGaugeVecFunc(name, help string, labels []string, fn func(emit func(value float64, labelValues ...string))) {
	n := len(labels)
	r.register(&family{name: name, help: help, kind: "gauge", labels: labels,
		collect: func(emit func(float64, []string)) {
			fn(func(value float64, lv ...string) {
				if len(lv) != n {
					panic(fmt.Sprintf("metrics: %s takes %d label values, got %d", name, n, len(lv)))
				}
				emit(value, append([]string(nil), lv...))
			})
		}})
}
