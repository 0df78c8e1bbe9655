package console

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/jetbpm/jetbpm/streams"
)

// BenchmarkFactIndexFull fills a fact index to its cap with instances of
// ids of the length the engine makes, each with a "started" fact and
// then incident facts, and reports the heap the full index holds. One
// fact an instance is the worst case: the most entries.
func BenchmarkFactIndexFull(b *testing.B) {
	started := streams.FactSubject(streams.FactInstance, "charge", "started")
	raised := streams.FactSubject(streams.FactIncident, "charge", "raised")
	for _, perInstance := range []int{1, 3, 10} {
		b.Run(fmt.Sprintf("facts=%d", perInstance), func(b *testing.B) {
			var heap uint64
			for range b.N {
				before := heapInUse()
				x := newFactIndex(maxIndexedFacts)
				seq := uint64(0)
				for i := range maxIndexedFacts / perInstance {
					data := fmt.Appendf(nil, `{"instanceId":"8RGi5ghwV0XQDirp%06d","process":"charge"}`, i)
					for f := range perInstance {
						subject := raised
						if f == 0 {
							subject = started
						}
						seq++
						x.add(seq, subject, data)
					}
				}
				if held, _ := x.size(); held != maxIndexedFacts/perInstance*perInstance {
					b.Fatalf("%d facts held, want %d", held, maxIndexedFacts/perInstance*perInstance)
				}
				heap = heapInUse() - before
				runtime.KeepAlive(x)
			}
			b.ReportMetric(float64(heap)/(1<<20), "MiB")
		})
	}
}

func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}
