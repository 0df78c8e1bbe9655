package jobs

import (
	"encoding/json"
	"testing"
	"time"
)

// FuzzDecide: whatever a worker reports, for whatever delivery, Decide
// returns a coherent decision and never panics.
func FuzzDecide(f *testing.F) {
	f.Add([]byte(`{"kind":"fail","code":"404","body":{"type":"NOT_FOUND"}}`), uint64(1), true)
	f.Add([]byte(`{"kind":"complete","output":{"data":{"id":1}}}`), uint64(3), false)
	f.Add([]byte(`{"kind":"extend","extendMs":1000}`), uint64(2), true)
	f.Add([]byte(`{"kind":"fail","retries":3,"retryBackoffMs":-1}`), uint64(1), false)
	f.Add([]byte(`{"kind":"status","status":"X","cannotRunPolicy":true}`), uint64(9), false)
	f.Fuzz(func(t *testing.T, body []byte, delivery uint64, engine bool) {
		var r Report
		if json.Unmarshal(body, &r) != nil || r.Validate() != nil {
			return
		}
		p := Policy{Trust: WorkerTrusted, Retry: FixedDelaySpec(3, time.Millisecond), LockDuration: time.Second, MaxLockDuration: time.Minute,
			Rules: []Rule{{Code: "404", When: `body.type == "NOT_FOUND"`, Outcome: BusinessStatus, Value: "NF"}}, Status: "s",
			Outputs: []OutputRule{{Path: "body.data.id", Variable: "id"}}}
		if engine {
			p.Trust = EngineAuthoritative
		}
		st := NewState("i/n/1", "t", p, t0)
		st.Delivery = 2
		d := Decide(st, &r, Delivery{Count: delivery, Seq: 1}, Env{Now: t0})
		if d.Terminal != nil && d.Action != Ack && d.Action != Term {
			t.Fatalf("a terminal outcome must ack or terminate the job: %+v", d)
		}
		if d.Action == Nak && d.Delay < 0 {
			t.Fatalf("negative retry delay: %+v", d)
		}
		if !d.Verdict.Accepted && d.Terminal == nil && d.Action != None && d.Action != Term {
			t.Fatalf("a refusal must not touch the job: %+v", d)
		}
	})
}
