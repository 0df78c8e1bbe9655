// Package metrics is a small, dependency-free metrics registry that writes
// the Prometheus text exposition format (version 0.0.4).
//
// A Registry holds metric families by name. Counters and gauges are updated
// with atomics and are safe for concurrent use; a Vec holds one series per
// combination of label values; a Func metric is computed when it is scraped,
// for values that live elsewhere (a queue depth read from JetStream):
//
//	r := metrics.NewRegistry()
//	enqueued := r.NewCounterVec("jetbpm_jobs_enqueued_total", "Jobs enqueued.", "topic")
//	enqueued.With("payments").Inc()
//	r.NewGaugeFunc("jetbpm_ready", "1 when the engine is ready.", func() float64 { return 1 })
//	http.Handle("/metrics", metrics.Handler(r))
//
// Registering an invalid or duplicate name, or calling With with the wrong
// number of label values, is a programming error and panics.
package metrics

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"sort"
	"sync"
)

// ContentType is the media type of the text WriteText produces.
const ContentType = "text/plain; version=0.0.4; charset=utf-8"

// Registry is a set of metric families, written in name order.
type Registry struct {
	mu       sync.Mutex
	families map[string]*family
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{families: make(map[string]*family)}
}

// family is one named metric with its HELP and TYPE lines.
type family struct {
	name, help, kind string
	labels           []string
	// collect calls emit once per series, in any order.
	collect func(emit func(value float64, labelValues []string))
}

var (
	metricName = regexp.MustCompile(`^[a-zA-Z_:][a-zA-Z0-9_:]*$`)
	labelName  = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)
)

func (r *Registry) register(f *family) {
	if !metricName.MatchString(f.name) {
		panic(fmt.Sprintf("metrics: invalid metric name %q", f.name))
	}
	for _, l := range f.labels {
		if !labelName.MatchString(l) || len(l) >= 2 && l[:2] == "__" {
			panic(fmt.Sprintf("metrics: invalid label name %q on %s", l, f.name))
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.families[f.name]; dup {
		panic(fmt.Sprintf("metrics: duplicate metric name %s", f.name))
	}
	r.families[f.name] = f
}

type sample struct {
	labelValues []string
	value       float64
}

// WriteText writes every family in the Prometheus text format, families
// sorted by name and series by label values. Func metrics are computed now.
// A family without any series yet (an unused Vec) is left out.
func (r *Registry) WriteText(w io.Writer) error {
	r.mu.Lock()
	fams := make([]*family, 0, len(r.families))
	for _, f := range r.families {
		fams = append(fams, f)
	}
	r.mu.Unlock()
	sort.Slice(fams, func(i, j int) bool { return fams[i].name < fams[j].name })

	bw := bufio.NewWriter(w)
	for _, f := range fams {
		var samples []sample
		f.collect(func(v float64, lv []string) {
			samples = append(samples, sample{labelValues: lv, value: v})
		})
		if len(samples) == 0 {
			continue
		}
		sort.Slice(samples, func(i, j int) bool { return lessValues(samples[i].labelValues, samples[j].labelValues) })
		fmt.Fprintf(bw, "# HELP %s %s\n# TYPE %s %s\n", f.name, escapeHelp(f.help), f.name, f.kind)
		for _, s := range samples {
			bw.WriteString(f.name)
			writeLabels(bw, f.labels, s.labelValues)
			bw.WriteByte(' ')
			bw.WriteString(formatValue(s.value))
			bw.WriteByte('\n')
		}
	}
	return bw.Flush()
}

// Handler serves r in the Prometheus text format.
func Handler(r *Registry) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		var buf bytes.Buffer
		if err := r.WriteText(&buf); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", ContentType)
		w.Write(buf.Bytes())
	})
}

func lessValues(a, b []string) bool {
	for i := range a {
		if i >= len(b) {
			return false
		}
		if a[i] != b[i] {
			return a[i] < b[i]
		}
	}
	return len(a) < len(b)
}
