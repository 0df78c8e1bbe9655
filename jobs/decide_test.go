package jobs

import (
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

func newTestState(p Policy) *State {
	if p.LockDuration == 0 {
		p.LockDuration = time.Minute
	}
	if p.Retry.Kind == "" {
		p.Retry = FixedDelaySpec(3, time.Second)
	}
	return NewState("i/t/1", "topic", p, t0)
}

func decide(st *State, kind ReportKind, delivery uint64, mod func(*Report)) Decision {
	r := &Report{Kind: kind, JobID: st.ID, Delivery: "x"}
	if mod != nil {
		mod(r)
	}
	return Decide(st, r, Delivery{Stream: "JETBPM_JOBS", Count: delivery, Seq: 7}, Env{Now: t0})
}

func TestDecideFencesDeliveries(t *testing.T) {
	st := newTestState(Policy{Trust: EngineAuthoritative})
	if d := decide(st, CheckIn, 2, nil); !d.Verdict.Accepted || st.Delivery != 2 || !d.Changed {
		t.Fatalf("check-in of a new delivery: %+v, state %+v", d, st)
	}
	if !strings.Contains(st.LastError, "delivery 1: lock expired") {
		t.Errorf("delivery 1 ended without a verdict: last error %q", st.LastError)
	}
	for _, k := range []ReportKind{Complete, Fail, Extend} {
		if d := decide(st, k, 1, nil); d.Verdict.Accepted || d.Action != None || d.Terminal != nil || !strings.Contains(d.Verdict.Reason, "stale") {
			t.Errorf("stale %s: %+v", k, d)
		}
	}
	if d := decide(st, Complete, 2, func(r *Report) { r.Output = map[string]any{"ok": true} }); d.Action != Ack || d.Terminal.Kind != Done {
		t.Fatalf("holder complete: %+v", d)
	}
}

func TestDecideRetriesThenExhausts(t *testing.T) {
	st := newTestState(Policy{Trust: EngineAuthoritative, Retry: FixedDelaySpec(2, 5*time.Second)})
	d := decide(st, Fail, 1, func(r *Report) { r.Code = "503" })
	if d.Action != Nak || d.Delay != 5*time.Second || d.Terminal != nil || st.Nacked != 1 {
		t.Fatalf("first fault: %+v", d)
	}
	d = decide(st, Fail, 2, func(r *Report) { r.Code = "503"; r.Message = "down" })
	if d.Action != Term || d.Terminal == nil || d.Terminal.Cause != CauseExhausted || d.Terminal.Attempts != 2 ||
		!strings.Contains(d.Terminal.Message, "503: down") {
		t.Fatalf("second fault: %+v %+v", d, d.Terminal)
	}
}

// A second copy of a fail report for a delivery already sent back must not
// nak again: the message may be on its next delivery by then.
func TestDecideIgnoresRepeatedFail(t *testing.T) {
	st := newTestState(Policy{Trust: EngineAuthoritative})
	if d := decide(st, Fail, 1, func(r *Report) { r.Code = "503" }); d.Action != Nak {
		t.Fatalf("first fail: %+v", d)
	}
	before := *st
	for _, k := range []ReportKind{Fail, Extend, Complete} {
		if d := decide(st, k, 1, func(r *Report) { r.Code = "503" }); d.Verdict.Accepted || d.Action != None || d.Terminal != nil || d.Changed ||
			!strings.Contains(d.Verdict.Reason, "already sent back") {
			t.Errorf("%s again on the nacked delivery: %+v", k, d)
		}
	}
	if st.Delivery != before.Delivery || st.Nacked != before.Nacked || st.LastError != before.LastError || st.Budget != before.Budget {
		t.Errorf("state changed by the repeats: %+v, was %+v", st, before)
	}
	if d := decide(st, CheckIn, 2, nil); !d.Verdict.Accepted {
		t.Errorf("check-in of the retry's delivery refused: %+v", d)
	}
}

func TestDecidePoisonDeliveryExhaustsAtCheckIn(t *testing.T) {
	st := newTestState(Policy{Retry: FixedDelaySpec(2, 0)})
	decide(st, CheckIn, 2, nil) // delivery 1 died; attempt 2 may run
	d := decide(st, CheckIn, 3, nil)
	if d.Verdict.Accepted || d.Action != Term || d.Terminal.Kind != Failed || !strings.Contains(d.Terminal.Message, "lock expired") {
		t.Fatalf("%+v %+v", d, d.Terminal)
	}
}

func TestDecideTerminalReportPastBudgetStands(t *testing.T) {
	st := newTestState(Policy{Retry: FixedDelaySpec(1, 0)})
	d := decide(st, Complete, 2, func(r *Report) { r.Output = map[string]any{"v": 1} })
	if !d.Verdict.Accepted || d.Terminal == nil || d.Terminal.Kind != Done {
		t.Fatalf("a worker that did the work anyway: %+v", d)
	}
}

func TestDecideExtendCap(t *testing.T) {
	st := newTestState(Policy{LockDuration: time.Minute, MaxLockDuration: 3 * time.Minute})
	r := &Report{Kind: Extend, JobID: st.ID, Delivery: "x"}
	d := Decide(st, r, Delivery{Count: 1, Seq: 7}, Env{Now: t0})
	if d.Action != Progress || d.Verdict.LockExpiresAt == nil {
		t.Fatalf("first extend: %+v", d)
	}
	// lockedAt is assumed a lock before first contact: at t0+61s the lock
	// would run to 3m01s from it, past the cap.
	d = Decide(st, r, Delivery{Count: 1, Seq: 7}, Env{Now: t0.Add(61 * time.Second)})
	if d.Action != None || d.Verdict.Accepted || !strings.Contains(d.Verdict.Reason, "maxLockDuration") {
		t.Fatalf("extend past the cap: %+v", d)
	}
}

func TestDecideTrustModes(t *testing.T) {
	rules := []Rule{{Code: "404", Outcome: BusinessStatus, Value: "NOT_FOUND"}}
	// WorkerTrusted: the worker's verdicts stand; a fail without a retries
	// override means the worker's own retries are spent.
	st := newTestState(Policy{Trust: WorkerTrusted, Rules: rules, Status: "s"})
	if d := decide(st, BpmnError, 1, func(r *Report) { r.ErrorCode = "E" }); d.Terminal.Kind != Errored || d.Terminal.ErrorCode != "E" {
		t.Fatalf("trusted bpmnError: %+v", d)
	}
	st = newTestState(Policy{Trust: WorkerTrusted})
	if d := decide(st, Fail, 1, func(r *Report) { r.Attempts = 3 }); d.Terminal == nil || d.Terminal.Attempts != 3 {
		t.Fatalf("trusted fail: %+v", d)
	}
	st = newTestState(Policy{Trust: WorkerTrusted})
	two := 2
	if d := decide(st, Fail, 1, func(r *Report) { r.Retries = &two; r.RetryBackoffMs = 250 }); d.Action != Nak || d.Delay != 250*time.Millisecond || st.Budget != 3 {
		t.Fatalf("trusted retries override: %+v budget %d", d, st.Budget)
	}
	// EngineAuthoritative: verdicts are raw faults the engine classifies;
	// a retries override is ignored.
	st = newTestState(Policy{Trust: EngineAuthoritative, Rules: rules, Status: "s"})
	if d := decide(st, Fail, 1, func(r *Report) { r.Code = "404" }); d.Terminal == nil || d.Terminal.Kind != StatusSet || d.Terminal.Status != "NOT_FOUND" {
		t.Fatalf("engine classification: %+v", d)
	}
	st = newTestState(Policy{Trust: EngineAuthoritative})
	if d := decide(st, Status, 1, func(r *Report) { r.Status = "FINE" }); d.Terminal != nil || d.Action != Nak {
		t.Fatalf("an untrusted status is a fault to retry: %+v", d)
	}
	st = newTestState(Policy{Trust: EngineAuthoritative})
	if d := decide(st, Fail, 1, func(r *Report) { r.Retries = &two }); !strings.Contains(d.Verdict.Reason, "override ignored") {
		t.Fatalf("override under EngineAuthoritative: %+v", d)
	}
}

// A kept default policy (not shipped): the worker reports as an
// EngineAuthoritative one would; the engine classifies its faults and owns
// the retries, but trusts its business verdicts and an explicit retries
// override, as it would have under WorkerTrusted.
func TestDecideKeptDefaultPolicy(t *testing.T) {
	kept := func(p Policy) *State {
		st := newTestState(p)
		st.Kept = true
		return st
	}
	rules := []Rule{{Code: "404", Outcome: BusinessStatus, Value: "NOT_FOUND"}}
	st := kept(Policy{Trust: WorkerTrusted, Retry: FixedDelaySpec(2, 5*time.Second)})
	d := decide(st, Fail, 1, func(r *Report) { r.Code = "503" })
	if d.Action != Nak || d.Delay != 5*time.Second || d.Terminal != nil || st.Nacked != 1 {
		t.Fatalf("first fault of a kept policy: the engine retries it: %+v", d)
	}
	d = decide(st, Fail, 2, func(r *Report) { r.Code = "503"; r.Attempts = 5 })
	if d.Action != Term || d.Terminal == nil || d.Terminal.Cause != CauseExhausted || d.Terminal.Attempts != 2 {
		t.Fatalf("second fault: the engine's budget, not the worker's attempts: %+v %+v", d, d.Terminal)
	}
	st = kept(Policy{Trust: WorkerTrusted, Rules: rules, Status: "s"})
	if d := decide(st, Fail, 1, func(r *Report) { r.Code = "404" }); d.Terminal == nil || d.Terminal.Kind != StatusSet || d.Terminal.Status != "NOT_FOUND" {
		t.Fatalf("the engine classifies a kept policy's faults: %+v", d)
	}
	st = kept(Policy{Trust: WorkerTrusted})
	if d := decide(st, BpmnError, 1, func(r *Report) { r.ErrorCode = "E" }); d.Terminal == nil || d.Terminal.Kind != Errored || d.Terminal.ErrorCode != "E" {
		t.Fatalf("a kept policy trusts a bpmnError: %+v", d)
	}
	st = kept(Policy{Trust: WorkerTrusted})
	if d := decide(st, Status, 1, func(r *Report) { r.Status = "FINE" }); d.Terminal == nil || d.Terminal.Kind != StatusSet || d.Terminal.Status != "FINE" {
		t.Fatalf("a kept policy trusts a status: %+v", d)
	}
	st = kept(Policy{Trust: WorkerTrusted})
	zero := 0
	if d := decide(st, Fail, 1, func(r *Report) { r.Retries = &zero }); d.Action != Term || d.Terminal == nil || d.Terminal.Cause != CauseExhausted {
		t.Fatalf("retries 0 on a kept policy ends the job now: %+v", d)
	}
	st = kept(Policy{Trust: WorkerTrusted})
	two := 2
	if d := decide(st, Fail, 1, func(r *Report) { r.Retries = &two; r.RetryBackoffMs = 250 }); d.Action != Nak || d.Delay != 250*time.Millisecond || st.Budget != 3 {
		t.Fatalf("retries override on a kept policy: %+v budget %d", d, st.Budget)
	}
	st = kept(Policy{Trust: WorkerTrusted})
	if d := decide(st, Complete, 1, func(r *Report) { r.Output = map[string]any{"ok": true} }); d.Terminal == nil || d.Terminal.Kind != Done || d.Terminal.Output["ok"] != true {
		t.Fatalf("complete of a kept policy: %+v", d)
	}
}

func TestPolicyEqual(t *testing.T) {
	base := Overrides{}.Resolve(Overrides{})
	if !base.Equal(Overrides{}.Resolve(Overrides{})) {
		t.Fatal("a policy differs from itself")
	}
	for name, o := range map[string]Overrides{
		"trust":   {Trust: EngineAuthoritative},
		"retry":   {Retry: ptrTo(FixedDelaySpec(3, time.Second))},
		"rules":   {Rules: []Rule{{Code: "1", Outcome: Technical}}},
		"outputs": {Outputs: []OutputRule{{Path: "body.x", Variable: "x"}}},
		"status":  {Status: "s"},
		"lock":    {LockDuration: time.Second},
		"maxLock": {MaxLockDuration: time.Hour},
	} {
		if o.Resolve(Overrides{}).Equal(base) {
			t.Errorf("%s: a changed policy equals the default", name)
		}
	}
}

func ptrTo[T any](v T) *T { return &v }

func TestDecideOutputMappingFailureIsDataFlow(t *testing.T) {
	st := newTestState(Policy{Trust: EngineAuthoritative, Outputs: []OutputRule{{Path: "body.id", Variable: "id", Required: true}}})
	d := decide(st, Complete, 1, func(r *Report) { r.Output = map[string]any{} })
	if d.Action != Ack || d.Terminal == nil || d.Terminal.Cause != CauseDataFlow {
		t.Fatalf("%+v", d)
	}
}

func TestParseDelivery(t *testing.T) {
	for _, tc := range []struct {
		subject string
		want    Delivery
		ok      bool
	}{
		{"$JS.ACK.JETBPM_JOBS.topic-a.3.42.40.1700000000000000000.0", Delivery{"JETBPM_JOBS", "topic-a", 3, 42}, true},
		{"$JS.ACK.dom.acc.JETBPM_JOBS.topic-a.1.7.7.1700000000000000000.0.tok", Delivery{"JETBPM_JOBS", "topic-a", 1, 7}, true},
		{"$JS.ACK.JETBPM_JOBS.topic-a.0.42.40.1.0", Delivery{}, false},
		{"_INBOX.x", Delivery{}, false},
		{"$JS.ACK.a.b.c.d.e", Delivery{}, false},
	} {
		got, err := ParseDelivery(tc.subject)
		if (err == nil) != tc.ok || tc.ok && got != tc.want {
			t.Errorf("ParseDelivery(%q) = %+v, %v", tc.subject, got, err)
		}
	}
}

func TestDecideReleaseDoesNotCountAsAnAttempt(t *testing.T) {
	st := newTestState(Policy{Trust: WorkerTrusted, Retry: FixedDelaySpec(1, time.Second)})
	for delivery := uint64(1); delivery <= 3; delivery++ {
		if delivery > 1 {
			if d := decide(st, CheckIn, delivery, nil); !d.Verdict.Accepted {
				t.Fatalf("check-in of delivery %d after releases: %+v", delivery, d)
			}
		}
		d := decide(st, Release, delivery, nil)
		if !d.Verdict.Accepted || d.Action != Nak || d.Delay != 0 || d.Terminal != nil || !d.Changed {
			t.Fatalf("release of delivery %d: %+v", delivery, d)
		}
		if d := decide(st, Release, delivery, nil); d.Verdict.Accepted || d.Action != None {
			t.Fatalf("second release of delivery %d: %+v", delivery, d)
		}
	}
	if st.LastError != "" {
		t.Errorf("a release is no failure: last error %q", st.LastError)
	}
	if d := decide(st, CheckIn, 4, nil); !d.Verdict.Accepted || d.Terminal != nil {
		t.Fatalf("check-in of delivery 4 with a budget of 1 after 3 releases: %+v", d)
	}
	if d := decide(st, Release, 3, nil); d.Verdict.Accepted || !strings.Contains(d.Verdict.Reason, "stale") {
		t.Errorf("stale release: %+v", d)
	}
}
