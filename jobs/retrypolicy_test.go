package jobs

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"
)

const ms = time.Millisecond

type step struct {
	attempt int
	backoff time.Duration
	retry   bool
}

func checkSteps(t *testing.T, p RetryPolicy, steps []step) {
	t.Helper()
	for _, s := range steps {
		d, ok := p.Retry(s.attempt, errors.New("boom"))
		if d != s.backoff || ok != s.retry {
			t.Errorf("Retry(%d) = %v, %v; want %v, %v", s.attempt, d, ok, s.backoff, s.retry)
		}
	}
}

func TestBatteries(t *testing.T) {
	tests := []struct {
		name  string
		p     RetryPolicy
		steps []step
	}{
		{"none", NoRetry(), []step{{1, 0, false}, {2, 0, false}}},
		{"fixed", FixedDelay(3, 250*ms), []step{{1, 250 * ms, true}, {2, 250 * ms, true}, {3, 0, false}, {9, 0, false}}},
		{"fixed clamps", FixedDelay(0, -ms), []step{{1, 0, false}}},
		{"fixed zero delay", FixedDelay(2, 0), []step{{1, 0, true}, {2, 0, false}}},
		{"exponential", ExponentialBackoff(9, 500*ms, 4*time.Second, 0), []step{
			{1, 500 * ms, true}, {2, time.Second, true}, {3, 2 * time.Second, true},
			{4, 4 * time.Second, true}, {5, 4 * time.Second, true}, {8, 4 * time.Second, true}, {9, 0, false},
		}},
		{"exponential cap not a power of two", ExponentialBackoff(9, 500*ms, 3*time.Second, 0), []step{
			{3, 2 * time.Second, true}, {4, 3 * time.Second, true},
		}},
		{"exponential base above cap", ExponentialBackoff(3, 5*time.Second, time.Second, 0), []step{{1, time.Second, true}}},
		{"exponential zero base", ExponentialBackoff(math.MaxInt, 0, time.Second, 0.5), []step{{1 << 40, 0, true}}},
		{"exponential no overflow", ExponentialBackoff(math.MaxInt, time.Second, math.MaxInt64, 0), []step{
			{200, math.MaxInt64, true}, {1 << 40, math.MaxInt64, true},
		}},
		{"exponential negative jitter clamps to 0", ExponentialBackoff(2, time.Second, time.Second, -1), []step{{1, time.Second, true}, {2, 0, false}}},
		{"exponential NaN jitter is 0", ExponentialBackoff(2, time.Second, time.Second, math.NaN()), []step{{1, time.Second, true}}},
		{"default = 3 executions", DefaultRetryPolicy(), []step{{3, 0, false}, {4, 0, false}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { checkSteps(t, tt.p, tt.steps) })
	}
}

func TestDefaultRetryPolicy(t *testing.T) {
	p := DefaultRetryPolicy()
	for attempt, want := range map[int]time.Duration{1: 500 * ms, 2: time.Second} {
		d, ok := p.Retry(attempt, nil)
		if !ok || d < want*8/10 || d > want*12/10 {
			t.Errorf("Retry(%d) = %v, %v; want %v ±20%%, true", attempt, d, ok, want)
		}
	}
	if _, ok := p.Retry(3, nil); ok {
		t.Error("Retry(3) retries; the default allows 3 executions")
	}
	want := RetrySpec{Kind: RetryExponential, MaxAttempts: 3, Base: 500 * ms, Cap: 30 * time.Second, Jitter: 0.2}
	if DefaultRetrySpec != want {
		t.Errorf("DefaultRetrySpec = %+v, want %+v", DefaultRetrySpec, want)
	}
}

func TestJitterBounds(t *testing.T) {
	for _, j := range []float64{0.2, 1} {
		p := ExponentialBackoff(10, 500*ms, 30*time.Second, j)
		for _, attempt := range []int{1, 3, 9} {
			b := min(500*ms<<(attempt-1), 30*time.Second)
			lo, hi := time.Duration(float64(b)*(1-j)), time.Duration(float64(b)*(1+j))
			seen := map[time.Duration]bool{}
			for range 1000 {
				d, ok := p.Retry(attempt, nil)
				if !ok || d < lo || d > hi || d < 0 {
					t.Fatalf("jitter %v attempt %d: Retry = %v, %v; want within [%v, %v]", j, attempt, d, ok, lo, hi)
				}
				seen[d] = true
			}
			if len(seen) < 2 {
				t.Errorf("jitter %v attempt %d: 1000 backoffs all equal", j, attempt)
			}
		}
	}
}

func TestJitterClampsAndSaturates(t *testing.T) {
	above := ExponentialBackoff(2, time.Second, time.Second, 7) // taken as 1: [0, 2s]
	huge := ExponentialBackoff(math.MaxInt, time.Second, math.MaxInt64, 1)
	for range 1000 {
		if d, ok := above.Retry(1, nil); !ok || d < 0 || d > 2*time.Second {
			t.Fatalf("jitter 7: Retry = %v, %v; want within [0, 2s]", d, ok)
		}
		if d, ok := huge.Retry(100, nil); !ok || d < 0 {
			t.Fatalf("saturated backoff: Retry = %v, %v; want non-negative", d, ok)
		}
	}
}

func TestSpecPolicyRoundTrip(t *testing.T) {
	custom := func(name string) (RetryPolicy, bool) {
		if name != "always" {
			return nil, false
		}
		return alwaysRetry{}, true
	}
	tests := []struct {
		name  string
		spec  RetrySpec
		steps []step
	}{
		{"none", NoRetrySpec(), []step{{1, 0, false}}},
		{"fixed", FixedDelaySpec(2, time.Second), []step{{1, time.Second, true}, {2, 0, false}}},
		{"exponential", ExponentialSpec(4, ms, time.Hour, 0), []step{{1, ms, true}, {3, 4 * ms, true}, {4, 0, false}}},
		// The custom policy would retry for ever; MaxAttempts still ends it,
		// and its negative backoff is clamped.
		{"custom capped", CustomRetrySpec("always", 3), []step{{1, 0, true}, {2, 0, true}, {3, 0, false}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := tt.spec.Policy(custom)
			if err != nil {
				t.Fatal(err)
			}
			checkSteps(t, p, tt.steps)
		})
	}
}

type alwaysRetry struct{}

func (alwaysRetry) Retry(int, error) (time.Duration, bool) { return -time.Second, true }

func TestSpecPolicyCustomNotFound(t *testing.T) {
	for _, lookup := range []func(string) (RetryPolicy, bool){
		nil,
		func(string) (RetryPolicy, bool) { return nil, false },
		func(string) (RetryPolicy, bool) { return nil, true },
	} {
		_, err := CustomRetrySpec("missing", 3).Policy(lookup)
		if err == nil || !strings.Contains(err.Error(), `"missing"`) {
			t.Errorf("Policy = %v, want an error naming the policy", err)
		}
	}
}

func TestSpecValidate(t *testing.T) {
	tests := []struct {
		spec RetrySpec
		want string // "" = valid
	}{
		{NoRetrySpec(), ""},
		{FixedDelaySpec(1, 0), ""},
		{ExponentialSpec(5, 0, 0, 0), ""},
		{ExponentialSpec(5, time.Second, time.Second, 1), ""},
		{CustomRetrySpec("x", 1), ""},
		{DefaultRetrySpec, ""},
		{RetrySpec{}, "maxAttempts is 0"},
		{RetrySpec{MaxAttempts: 1}, "kind is empty"},
		{RetrySpec{Kind: "linear", MaxAttempts: 1}, `unknown kind "linear"`},
		{RetrySpec{Kind: RetryNone, MaxAttempts: 3}, "want 1"},
		{FixedDelaySpec(0, time.Second), "maxAttempts is 0"},
		{FixedDelaySpec(-2, time.Second), "maxAttempts is -2"},
		{FixedDelaySpec(2, -time.Second), "delay -1s is negative"},
		{ExponentialSpec(2, -ms, time.Second, 0), "base -1ms is negative"},
		{ExponentialSpec(2, 0, -ms, 0), "cap -1ms is negative"},
		{ExponentialSpec(2, 2*time.Second, time.Second, 0), "base 2s exceeds cap 1s"},
		{ExponentialSpec(2, ms, time.Second, -0.1), "jitter -0.1 is outside [0,1]"},
		{ExponentialSpec(2, ms, time.Second, 1.5), "jitter 1.5 is outside [0,1]"},
		{ExponentialSpec(2, ms, time.Second, math.NaN()), "jitter NaN is outside [0,1]"},
		{CustomRetrySpec("", 3), "no policy name"},
		{CustomRetrySpec("x", 0), "maxAttempts is 0"},
	}
	for _, tt := range tests {
		err := tt.spec.Validate()
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%+v: Validate = %v, want nil", tt.spec, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%+v: Validate = %v, want an error containing %q", tt.spec, err, tt.want)
		}
		if _, perr := tt.spec.Policy(nil); tt.want != "" && perr == nil {
			t.Errorf("%+v: Policy accepted an invalid spec", tt.spec)
		}
	}
}
