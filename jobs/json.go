package jobs

import (
	"encoding/json"
	"time"
)

// Durations cross the worker protocol as integer milliseconds (a Go
// time.Duration would encode as nanoseconds, which no other language
// expects).

type retrySpecJSON struct {
	Kind        RetryKind `json:"kind"`
	MaxAttempts int       `json:"maxAttempts"`
	DelayMs     int64     `json:"delayMs,omitempty"`
	BaseMs      int64     `json:"baseMs,omitempty"`
	CapMs       int64     `json:"capMs,omitempty"`
	Jitter      float64   `json:"jitter,omitempty"`
}

// MarshalJSON writes the spec with millisecond durations.
func (s RetrySpec) MarshalJSON() ([]byte, error) {
	return json.Marshal(retrySpecJSON{s.Kind, s.MaxAttempts, s.Delay.Milliseconds(), s.Base.Milliseconds(), s.Cap.Milliseconds(), s.Jitter})
}

// UnmarshalJSON reads the spec with millisecond durations.
func (s *RetrySpec) UnmarshalJSON(b []byte) error {
	var w retrySpecJSON
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*s = RetrySpec{Kind: w.Kind, MaxAttempts: w.MaxAttempts, Delay: millis(w.DelayMs), Base: millis(w.BaseMs), Cap: millis(w.CapMs), Jitter: w.Jitter}
	return nil
}

type policyJSON struct {
	policyFields
	LockDurationMs    int64 `json:"lockDurationMs"`
	MaxLockDurationMs int64 `json:"maxLockDurationMs"`
}

// policyFields is Policy without its JSON methods, so encoding it does not
// recurse.
type policyFields Policy

// MarshalJSON writes the policy with millisecond durations.
func (p Policy) MarshalJSON() ([]byte, error) {
	return json.Marshal(policyJSON{policyFields(p), p.LockDuration.Milliseconds(), p.MaxLockDuration.Milliseconds()})
}

// UnmarshalJSON reads the policy with millisecond durations.
func (p *Policy) UnmarshalJSON(b []byte) error {
	var w policyJSON
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*p = Policy(w.policyFields)
	p.LockDuration, p.MaxLockDuration = millis(w.LockDurationMs), millis(w.MaxLockDurationMs)
	return nil
}

func millis(n int64) time.Duration { return time.Duration(n) * time.Millisecond }
