package incidents

import (
	"testing"
	"time"
)

func TestFilterMatch(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	r := &Record{ID: "i/n/1", Instance: "i", ProcessID: "p", Node: "n", CauseClass: CauseOperation, State: Open, FirstFailure: now.Add(-time.Hour)}
	for _, tc := range []struct {
		f    Filter
		want bool
	}{
		{Filter{}, true},
		{Filter{Instance: "i", ProcessID: "p", Node: "n", Cause: CauseOperation, State: "open"}, true},
		{Filter{Instance: "other"}, false},
		{Filter{ProcessID: "other"}, false},
		{Filter{Node: "other"}, false},
		{Filter{Cause: CauseDataFlow}, false},
		{Filter{State: "closed"}, false},
		{Filter{State: "all"}, true},
		{Filter{OlderThan: 30 * time.Minute}, true},
		{Filter{OlderThan: 2 * time.Hour}, false},
	} {
		if got := tc.f.Match(r, now); got != tc.want {
			t.Errorf("%+v.Match = %v, want %v", tc.f, got, tc.want)
		}
	}
	closed := *r
	closed.State = Resolved
	if (Filter{State: "open"}).Match(&closed, now) || !(Filter{State: "closed"}).Match(&closed, now) {
		t.Error("closed record filtered wrongly")
	}
}

func TestRecordOutcome(t *testing.T) {
	r := &Record{History: []Transition{{Seq: 1, Kind: Raised}, {Seq: 2, Kind: Retried, Command: "cmd:a"}}}
	if tr, ok := r.Outcome("cmd:a"); !ok || tr.Kind != Retried {
		t.Fatalf("%+v %v", tr, ok)
	}
	if _, ok := r.Outcome("cmd:b"); ok {
		t.Fatal("unknown command found")
	}
}
