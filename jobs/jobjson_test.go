package jobs

import (
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/jetbpm/jetbpm/internal/wirejson"
)

// marshalsAlike checks a hand-written encoder's output and error against
// json.Marshal(v).
func marshalsAlike(t *testing.T, v any, got []byte, gerr error) {
	t.Helper()
	want, werr := json.Marshal(v)
	switch {
	case (werr == nil) != (gerr == nil):
		t.Fatalf("%+v: hand error %v, json.Marshal error %v", v, gerr, werr)
	case werr != nil && werr.Error() != gerr.Error():
		t.Fatalf("%+v: hand error %q, json.Marshal error %q", v, gerr, werr)
	case werr == nil && string(got) != string(want):
		t.Fatalf("%+v:\nhand         %s\njson.Marshal %s", v, got, want)
	}
}

// decodesAlike checks a hand-written decoder without its fallback
// (fast) and the public one (public) against encoding/json (slow): the
// same value or both an error; the public decoder's error is
// encoding/json's own.
func decodesAlike[T any](t *testing.T, data []byte, fast, public, slow func([]byte, *T) error) (T, bool) {
	t.Helper()
	var f, p, s T
	ferr, perr, serr := fast(data, &f), public(data, &p), slow(data, &s)
	if !errors.Is(ferr, wirejson.ErrUnsupported) {
		if (ferr == nil) != (serr == nil) {
			t.Fatalf("%q: hand error %v, encoding/json error %v", data, ferr, serr)
		}
		if ferr == nil && !reflect.DeepEqual(f, s) {
			t.Fatalf("%q:\nhand          %#v\nencoding/json %#v", data, f, s)
		}
	}
	if (perr == nil) != (serr == nil) || serr != nil && perr.Error() != serr.Error() || serr == nil && !reflect.DeepEqual(p, s) {
		t.Fatalf("%q: public decoder %#v (%v), encoding/json %#v (%v)", data, p, perr, s, serr)
	}
	return s, serr == nil
}

func unmarshalJobJSON(data []byte, j *Job) error { return json.Unmarshal(data, j) }

func sampleJobs() []Job {
	shipped := Overrides{}.Resolve(Overrides{})
	shipped.Rules = []Rule{{Code: "404", When: `body.type == "<x>"`, Outcome: BusinessStatus, Value: "NF"}}
	shipped.Outputs = []OutputRule{{Path: "body.id", Variable: "id", Required: true}}
	at := time.Date(2026, 12, 2, 10, 0, 0, 123456789, time.FixedZone("CET", 3600))
	return []Job{
		{},
		{ID: "order-1/charge/2", Topic: "payments", Instance: "order-1", ProcessID: "pay", Node: "charge",
			Input:    map[string]any{"amount": int64(42), "tags": []any{"a", 1.5, nil, true}, "z": map[string]any{"<": "&"}},
			ReportTo: "jetbpm.rpt.5.payments.order-1", LockDurationMs: 60000, EnqueuedAt: at},
		{ID: "é\u2028\"\\\n\x01", Input: map[string]any{}, Headers: map[string]string{"b": "2", "a": "<1>"}, EnqueuedAt: at.UTC(), Policy: &shipped},
		{ID: "x", Headers: map[string]string{}, LockDurationMs: math.MinInt64, Input: map[string]any{"f": math.Copysign(0, -1), "big": 1e300, "tiny": 1e-9}},
	}
}

func TestJobJSONMatchesEncodingJSON(t *testing.T) {
	for _, j := range sampleJobs() {
		b, err := AppendJob(nil, &j)
		marshalsAlike(t, j, b, err)
		back, ok := decodesAlike(t, b, decodeJob, UnmarshalJob, unmarshalJobJSON)
		if !ok {
			t.Fatalf("%s does not decode", b)
		}
		if back.ID != j.ID || back.LockDurationMs != j.LockDurationMs || !back.EnqueuedAt.Equal(j.EnqueuedAt) {
			t.Fatalf("round trip of %s: %+v", b, back)
		}
	}
}

func TestJobJSONErrors(t *testing.T) {
	j := Job{Input: map[string]any{"x": math.Inf(1)}}
	b, err := AppendJob(nil, &j)
	marshalsAlike(t, j, b, err)
	j = Job{EnqueuedAt: time.Date(12026, 1, 1, 0, 0, 0, 0, time.UTC)}
	b, err = AppendJob(nil, &j)
	marshalsAlike(t, j, b, err)
	for _, bad := range []string{`{"id":"x","lockDurationMs":1.5}`, `{"input":[1]}`, `{"id":`, `{"enqueuedAt":"yesterday"}`, `{"policy":{"retry":5}}`} {
		var got Job
		err := UnmarshalJob([]byte(bad), &got)
		want := json.Unmarshal([]byte(bad), new(Job))
		if err == nil || want == nil || err.Error() != want.Error() {
			t.Errorf("%s: error %v, want encoding/json's %v", bad, err, want)
		}
	}
}

// TestJobJSONDocExample decodes the job of docs/worker-protocol.md §5.
func TestJobJSONDocExample(t *testing.T) {
	doc := `{"id":"order-1/charge/2","topic":"payments","instanceId":"order-1","processId":"pay","nodeId":"charge",
 "input":{"amount":42},"reportTo":"jetbpm.rpt.5.payments.order-1","lockDurationMs":60000,
 "policy":{"trust":"workerTrusted","retry":{"kind":"exponential","maxAttempts":3,"baseMs":500,"capMs":30000,"jitter":0.2},
           "lockDurationMs":60000,"maxLockDurationMs":1800000}}`
	j, _ := decodesAlike(t, []byte(doc), decodeJob, UnmarshalJob, unmarshalJobJSON)
	want := ExponentialSpec(3, 500*time.Millisecond, 30*time.Second, 0.2)
	if j.Input["amount"] != 42.0 || j.Policy == nil || j.Policy.Retry != want || j.Policy.MaxLockDuration != 30*time.Minute {
		t.Fatalf("decoded %+v policy %+v", j, j.Policy)
	}
}

// FuzzJobJSON: the hand-written job codec and encoding/json agree on any
// message, and on any job's bytes.
func FuzzJobJSON(f *testing.F) {
	for _, j := range sampleJobs() {
		b, _ := json.Marshal(j)
		f.Add(b, j.ID, 1.5, int64(0))
	}
	f.Add([]byte(`{"ID":"case","Input":{"a":1},"input":{"b":2},"headers":{"h":null},"enqueuedAt":null,"policy":null,"x":[{}]}`), "\xff<", math.Copysign(0, -1), int64(-1))
	f.Add([]byte(`null`), "", 0.0, int64(1))
	f.Fuzz(func(t *testing.T, data []byte, s string, fl float64, n int64) {
		j, ok := decodesAlike(t, data, decodeJob, UnmarshalJob, unmarshalJobJSON)
		if ok {
			b, err := AppendJob(nil, &j)
			marshalsAlike(t, j, b, err)
		}
		j = Job{ID: s, Topic: s, Input: map[string]any{s: fl, "n": n}, Headers: map[string]string{s: s}, LockDurationMs: n,
			EnqueuedAt: time.Unix(n, 0).UTC()}
		b, err := AppendJob(nil, &j)
		marshalsAlike(t, j, b, err)
	})
}

// BenchmarkJobJSON is a worker's decoding and the engine's encoding of a
// job, with the default policy shipped and kept, by the hand-written codec
// and, for comparison, by encoding/json (docs/performance.md).
func BenchmarkJobJSON(b *testing.B) {
	p := Overrides{}.Resolve(Overrides{})
	job := Job{ID: "i/charge/2", Topic: "payments", Instance: "i", ProcessID: "pay", Node: "charge",
		Input: map[string]any{"n": 1}, ReportTo: "jetbpm.rpt.5.payments.i", LockDurationMs: 60000}
	for _, tc := range []struct {
		name   string
		policy *Policy
	}{{"shipped", &p}, {"kept", nil}} {
		job.Policy = tc.policy
		data, err := json.Marshal(job)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(tc.name+"/decode", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				var j Job
				if err := UnmarshalJob(data, &j); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(tc.name+"/encode", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := AppendJob(make([]byte, 0, 512), &job); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(tc.name+"/decode-encoding-json", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				var j Job
				if err := json.Unmarshal(data, &j); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(tc.name+"/encode-encoding-json", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := json.Marshal(job); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
