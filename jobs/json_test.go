package jobs

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestPolicyJSONUsesMilliseconds(t *testing.T) {
	p := Policy{
		Trust: WorkerTrusted, Retry: ExponentialSpec(4, 250*time.Millisecond, 8*time.Second, 0.1),
		Rules:        []Rule{{Code: "404", Outcome: BusinessStatus, Value: "NOT_FOUND"}},
		Status:       "lookup",
		LockDuration: 90 * time.Second, MaxLockDuration: 10 * time.Minute,
	}
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"lockDurationMs":90000`, `"maxLockDurationMs":600000`, `"baseMs":250`, `"capMs":8000`, `"maxAttempts":4`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("%s lacks %s", b, want)
		}
	}
	var back Policy
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, p) {
		t.Fatalf("round trip:\n got %+v\nwant %+v", back, p)
	}
}

// BenchmarkJobJSON is a worker's decoding and the engine's encoding of a
// job, with the default policy shipped and kept (docs/performance.md,
// session 4).
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
				if err := json.Unmarshal(data, &j); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(tc.name+"/encode", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := json.Marshal(job); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
