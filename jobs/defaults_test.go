package jobs

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestOverLaysFieldByField(t *testing.T) {
	fixed := FixedDelaySpec(4, time.Second)
	below := Overrides{
		Trust: EngineAuthoritative, Retry: &fixed, Rules: []Rule{{Code: "1", Outcome: Technical}},
		LockDuration: time.Minute, MaxLockDuration: time.Hour,
	}
	for _, tc := range []struct {
		name string
		o    Overrides
		want Overrides
	}{
		{"nothing set keeps below", Overrides{}, below},
		{"a lock only", Overrides{LockDuration: 5 * time.Minute}, func() Overrides { w := below; w.LockDuration = 5 * time.Minute; return w }()},
		{"a mapper replaces the rules", Overrides{Mapper: "http"}, func() Overrides { w := below; w.Rules, w.Mapper = nil, "http"; return w }()},
		{"trust and cap", Overrides{Trust: WorkerTrusted, MaxLockDuration: 2 * time.Hour},
			func() Overrides { w := below; w.Trust, w.MaxLockDuration = WorkerTrusted, 2*time.Hour; return w }()},
	} {
		if got := tc.o.Over(below); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: got %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

func TestDefaultsFor(t *testing.T) {
	none := NoRetrySpec()
	d := Defaults{
		All:    Overrides{Trust: EngineAuthoritative, LockDuration: 2 * time.Minute},
		Topics: map[string]Overrides{"slow": {LockDuration: 20 * time.Minute, Retry: &none}},
	}
	if got := d.For("other"); !reflect.DeepEqual(got, d.All) {
		t.Errorf("For(other) = %+v, want All", got)
	}
	p := Overrides{}.Resolve(d.For("slow"))
	if p.Trust != EngineAuthoritative || p.LockDuration != 20*time.Minute || p.Retry != none || p.MaxLockDuration != DefaultMaxLockDuration {
		t.Errorf("slow resolves to %+v", p)
	}
	// A task's own option still wins over its topic's.
	if p := (Overrides{LockDuration: time.Minute}).Resolve(d.For("slow")); p.LockDuration != time.Minute || p.Retry != none {
		t.Errorf("task over slow resolves to %+v", p)
	}
	if got := (Defaults{}).For("x"); !reflect.DeepEqual(got, Overrides{}) {
		t.Errorf("zero Defaults: %+v", got)
	}
}

func TestDefaultsValidate(t *testing.T) {
	bad := RetrySpec{Kind: "sometimes", MaxAttempts: 2}
	for _, tc := range []struct {
		d    Defaults
		want string // "" = valid
	}{
		{Defaults{}, ""},
		{Defaults{All: Overrides{LockDuration: 10 * time.Minute}, Topics: map[string]Overrides{"a": {MaxLockDuration: time.Hour}}}, ""},
		{Defaults{All: Overrides{Trust: "maybe"}}, `worker trust "maybe"`},
		{Defaults{All: Overrides{LockDuration: time.Hour}}, "lockDuration 1h0m0s is longer than maxLockDuration 30m0s"},
		{Defaults{Topics: map[string]Overrides{"": {}}}, "empty topic name"},
		{Defaults{Topics: map[string]Overrides{"b": {Retry: &bad}}}, `topic "b": retry: unknown kind "sometimes"`},
		{Defaults{All: Overrides{MaxLockDuration: time.Minute}, Topics: map[string]Overrides{"c": {LockDuration: 2 * time.Minute}}},
			`topic "c": lockDuration 2m0s is longer than maxLockDuration 1m0s`},
	} {
		err := tc.d.Validate()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%+v: %v", tc.d, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%+v: error %v, want it to contain %q", tc.d, err, tc.want)
		}
	}
}
