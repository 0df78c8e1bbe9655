package metrics

import (
	"math"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

func text(t *testing.T, r *Registry) string {
	t.Helper()
	var b strings.Builder
	if err := r.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestWriteTextExact(t *testing.T) {
	r := NewRegistry()
	jobs := r.NewCounterVec("jetbpm_jobs_total", "Jobs by topic and outcome.", "topic", "outcome")
	jobs.With("payments", "ok").Add(3)
	jobs.With("billing", "ok").Inc()
	jobs.With("billing", "failed").Inc()
	jobs.With("billing", "failed").Add(-5) // ignored: counters never go down
	up := r.NewGauge("a_up", "Line one\nand a back\\slash.")
	up.Set(1)
	locked := r.NewGaugeVec("jetbpm_locked_jobs", "Locked jobs.", "topic")
	locked.With(`we"ird\name` + "\n").Set(2.5)
	r.NewCounterVec("jetbpm_unused_total", "Never touched.", "topic")
	r.NewGaugeFunc("jetbpm_ready", "Ready.", func() float64 { return math.Inf(1) })
	r.NewCounterFunc("jetbpm_reconnects_total", "Reconnects.", func() float64 { return 1e6 })
	r.NewGaugeVecFunc("jetbpm_queue_depth", "Queue depth.", []string{"topic"}, func(emit func(float64, ...string)) {
		emit(7, "z")
		emit(0, "a")
	})

	want := `# HELP a_up Line one\nand a back\\slash.
# TYPE a_up gauge
a_up 1
# HELP jetbpm_jobs_total Jobs by topic and outcome.
# TYPE jetbpm_jobs_total counter
jetbpm_jobs_total{topic="billing",outcome="failed"} 1
jetbpm_jobs_total{topic="billing",outcome="ok"} 1
jetbpm_jobs_total{topic="payments",outcome="ok"} 3
# HELP jetbpm_locked_jobs Locked jobs.
# TYPE jetbpm_locked_jobs gauge
jetbpm_locked_jobs{topic="we\"ird\\name\n"} 2.5
# HELP jetbpm_queue_depth Queue depth.
# TYPE jetbpm_queue_depth gauge
jetbpm_queue_depth{topic="a"} 0
jetbpm_queue_depth{topic="z"} 7
# HELP jetbpm_ready Ready.
# TYPE jetbpm_ready gauge
jetbpm_ready +Inf
# HELP jetbpm_reconnects_total Reconnects.
# TYPE jetbpm_reconnects_total counter
jetbpm_reconnects_total 1e+06
`
	if got := text(t, r); got != want {
		t.Fatalf("got:\n%s\nwant:\n%s", got, want)
	}
}

func TestGaugeAddAndEmptyRegistry(t *testing.T) {
	r := NewRegistry()
	if got := text(t, r); got != "" {
		t.Fatalf("empty registry wrote %q", got)
	}
	g := r.NewGauge("g", "G.")
	g.Add(2)
	g.Add(-0.5)
	if got, want := text(t, r), "# HELP g G.\n# TYPE g gauge\ng 1.5\n"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}

func TestConcurrentUpdates(t *testing.T) {
	r := NewRegistry()
	c := r.NewCounter("c_total", "C.")
	v := r.NewGaugeVec("v", "V.", "k")
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 1000 {
				c.Inc()
				v.With(string(rune('a' + i%2))).Add(1)
				_ = text(t, r)
			}
		}()
	}
	wg.Wait()
	if c.Value() != 8000 {
		t.Fatalf("counter = %v, want 8000", c.Value())
	}
	if a, b := v.With("a").Value(), v.With("b").Value(); a != 4000 || b != 4000 {
		t.Fatalf("gauges = %v, %v, want 4000 each", a, b)
	}
}

func TestRegistrationPanics(t *testing.T) {
	cases := map[string]func(r *Registry){
		"bad name":       func(r *Registry) { r.NewCounter("1bad", "") },
		"bad label":      func(r *Registry) { r.NewGaugeVec("ok", "", "bad-label") },
		"reserved label": func(r *Registry) { r.NewGaugeVec("ok", "", "__x") },
		"duplicate":      func(r *Registry) { r.NewCounter("dup", ""); r.NewGauge("dup", "") },
		"wrong arity":    func(r *Registry) { r.NewCounterVec("ok", "", "a", "b").With("x") },
		"func wrong arity": func(r *Registry) {
			r.NewGaugeVecFunc("ok", "", []string{"a"}, func(emit func(float64, ...string)) { emit(1) })
			r.WriteText(&strings.Builder{})
		},
	}
	for name, f := range cases {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Fatal("no panic")
				}
			}()
			f(NewRegistry())
		})
	}
}

func TestHandler(t *testing.T) {
	r := NewRegistry()
	r.NewCounter("hits_total", "Hits.").Inc()
	rec := httptest.NewRecorder()
	Handler(r).ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if rec.Code != 200 || rec.Header().Get("Content-Type") != ContentType {
		t.Fatalf("status %d, content type %q", rec.Code, rec.Header().Get("Content-Type"))
	}
	if want := "# HELP hits_total Hits.\n# TYPE hits_total counter\nhits_total 1\n"; rec.Body.String() != want {
		t.Fatalf("body %q, want %q", rec.Body.String(), want)
	}
}
