package bench

import (
	"slices"
	"sync"
	"time"
)

// Percentiles summarises a latency sample in milliseconds.
type Percentiles struct {
	P50 float64 `json:"p50"`
	P95 float64 `json:"p95"`
	P99 float64 `json:"p99"`
	Max float64 `json:"max"`
	N   int     `json:"n"`
}

// sample collects latencies from many goroutines.
type sample struct {
	mu sync.Mutex
	d  []time.Duration
}

func (s *sample) add(d time.Duration) {
	s.mu.Lock()
	s.d = append(s.d, d)
	s.mu.Unlock()
}

func (s *sample) summary() Percentiles {
	s.mu.Lock()
	d := slices.Clone(s.d)
	s.mu.Unlock()
	if len(d) == 0 {
		return Percentiles{}
	}
	slices.Sort(d)
	at := func(q float64) float64 {
		i := int(q * float64(len(d)-1))
		return float64(d[i].Microseconds()) / 1000
	}
	return Percentiles{P50: at(0.50), P95: at(0.95), P99: at(0.99), Max: at(1), N: len(d)}
}

// usage is this process's CPU time and peak resident set (the embedded
// server included: it runs in this process).
type usage struct {
	cpu     time.Duration
	peakRSS int64
}
