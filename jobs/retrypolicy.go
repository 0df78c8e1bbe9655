package jobs

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"time"
)

// RetryPolicy decides whether a technical fault is retried and the backoff
// before the next attempt. attempt is the 1-based number of the
// execution that just failed: executions, not retries, so MaxAttempts 3 is
// the first execution + 2 retries. Implementations must be safe for
// concurrent use; the batteries are.
type RetryPolicy interface {
	Retry(attempt int, cause error) (backoff time.Duration, retry bool)
}

// NoRetry never retries: the first technical fault exhausts the job.
func NoRetry() RetryPolicy { return noRetry{} }

// FixedDelay retries while attempt < maxAttempts, always after delay.
// maxAttempts below 1 is taken as 1 and a negative delay as 0.
func FixedDelay(maxAttempts int, delay time.Duration) RetryPolicy {
	return fixedDelay{max: max(maxAttempts, 1), delay: max(delay, 0)}
}

// ExponentialBackoff retries while attempt < maxAttempts after
// min(ceiling, base·2^(attempt-1)) scaled by a uniform factor in
// [1-jitter, 1+jitter], so the ceiling bounds the un-jittered backoff. Jitter
// spreads the retries of many jobs failing together (a dependency outage);
// it comes from math/rand/v2 and is not reproducible. jitter is clamped to
// [0,1], negative durations are taken as 0, maxAttempts below 1 as 1.
func ExponentialBackoff(maxAttempts int, base, ceiling time.Duration, jitter float64) RetryPolicy {
	if !(jitter >= 0) { // also NaN
		jitter = 0
	}
	return exponentialBackoff{max: max(maxAttempts, 1), base: max(base, 0), cap: max(ceiling, 0), jitter: min(jitter, 1)}
}

// DefaultRetryPolicy is 3 executions, base 500 ms doubling to at most 30 s,
// ±20 % jitter: Camunda 7's count of 3, but with a backoff, since retrying
// at once is how a failing dependency gets a retry storm.
func DefaultRetryPolicy() RetryPolicy {
	return ExponentialBackoff(3, 500*time.Millisecond, 30*time.Second, 0.2)
}

// DefaultRetrySpec is DefaultRetryPolicy as data.
var DefaultRetrySpec = ExponentialSpec(3, 500*time.Millisecond, 30*time.Second, 0.2)

type noRetry struct{}

func (noRetry) Retry(int, error) (time.Duration, bool) { return 0, false }

type fixedDelay struct {
	max   int
	delay time.Duration
}

func (p fixedDelay) Retry(attempt int, _ error) (time.Duration, bool) {
	if attempt >= p.max {
		return 0, false
	}
	return p.delay, true
}

type exponentialBackoff struct {
	max       int
	base, cap time.Duration
	jitter    float64
}

func (p exponentialBackoff) Retry(attempt int, _ error) (time.Duration, bool) {
	if attempt >= p.max {
		return 0, false
	}
	b := min(p.base, p.cap)
	for n := 1; n < attempt && 0 < b && b < p.cap; n++ { // ≤ 63 rounds
		if b > p.cap/2 {
			b = p.cap // doubling would pass the cap (or overflow)
		} else {
			b *= 2
		}
	}
	if p.jitter == 0 || b == 0 {
		return b, true
	}
	f := float64(b) * (1 + p.jitter*(2*rand.Float64()-1))
	if f >= math.MaxInt64 {
		return math.MaxInt64, true
	}
	return max(time.Duration(f), 0), true
}

// cappedPolicy bounds a custom policy by its spec's MaxAttempts, so every job
// exhausts whatever the custom code answers, and clamps negative backoffs.
type cappedPolicy struct {
	max   int
	inner RetryPolicy
}

func (p cappedPolicy) Retry(attempt int, cause error) (time.Duration, bool) {
	if attempt >= p.max {
		return 0, false
	}
	d, ok := p.inner.Retry(attempt, cause)
	return max(d, 0), ok
}

// NoRetrySpec is NoRetry as data.
func NoRetrySpec() RetrySpec { return RetrySpec{Kind: RetryNone, MaxAttempts: 1} }

// FixedDelaySpec is FixedDelay as data.
func FixedDelaySpec(maxAttempts int, delay time.Duration) RetrySpec {
	return RetrySpec{Kind: RetryFixed, MaxAttempts: maxAttempts, Delay: delay}
}

// ExponentialSpec is ExponentialBackoff as data.
func ExponentialSpec(maxAttempts int, base, ceiling time.Duration, jitter float64) RetrySpec {
	return RetrySpec{Kind: RetryExponential, MaxAttempts: maxAttempts, Base: base, Cap: ceiling, Jitter: jitter}
}

// CustomRetrySpec names a Go RetryPolicy registered with the engine. It runs
// engine-side only and is asked only while attempt < maxAttempts.
func CustomRetrySpec(name string, maxAttempts int) RetrySpec {
	return RetrySpec{Kind: RetryCustom, MaxAttempts: maxAttempts, Name: name}
}

// Validate reports the first problem in s. Unlike the constructors of the
// batteries, which clamp, it rejects: a spec is configuration, and a typo
// in it should surface at deploy rather than as a silently different policy.
func (s RetrySpec) Validate() error {
	if s.MaxAttempts < 1 {
		return fmt.Errorf("retry %s: maxAttempts is %d, want at least 1 (it counts executions)", s.Kind, s.MaxAttempts)
	}
	switch s.Kind {
	case RetryNone:
		if s.MaxAttempts != 1 {
			return fmt.Errorf("retry none: maxAttempts is %d, want 1", s.MaxAttempts)
		}
	case RetryFixed:
		if s.Delay < 0 {
			return fmt.Errorf("retry fixed: delay %v is negative", s.Delay)
		}
	case RetryExponential:
		switch {
		case s.Base < 0:
			return fmt.Errorf("retry exponential: base %v is negative", s.Base)
		case s.Cap < 0:
			return fmt.Errorf("retry exponential: cap %v is negative", s.Cap)
		case s.Base > s.Cap:
			return fmt.Errorf("retry exponential: base %v exceeds cap %v", s.Base, s.Cap)
		case !(s.Jitter >= 0 && s.Jitter <= 1):
			return fmt.Errorf("retry exponential: jitter %v is outside [0,1]", s.Jitter)
		}
	case RetryCustom:
		if s.Name == "" {
			return errors.New("retry custom: no policy name")
		}
	case "":
		return errors.New("retry: kind is empty")
	default:
		return fmt.Errorf("retry: unknown kind %q", s.Kind)
	}
	return nil
}

// Policy validates s and turns it into a RetryPolicy. A custom kind is
// looked up by name with custom (which may be nil: then no custom policy
// exists) and wrapped so that it is asked only while attempt < MaxAttempts.
func (s RetrySpec) Policy(custom func(name string) (RetryPolicy, bool)) (RetryPolicy, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	switch s.Kind {
	case RetryNone:
		return NoRetry(), nil
	case RetryFixed:
		return FixedDelay(s.MaxAttempts, s.Delay), nil
	case RetryExponential:
		return ExponentialBackoff(s.MaxAttempts, s.Base, s.Cap, s.Jitter), nil
	}
	var p RetryPolicy
	ok := false
	if custom != nil {
		p, ok = custom(s.Name)
	}
	if !ok || p == nil {
		return nil, fmt.Errorf("retry custom: no policy registered as %q", s.Name)
	}
	return cappedPolicy{max: s.MaxAttempts, inner: p}, nil
}
