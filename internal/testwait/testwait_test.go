package testwait

import (
	"errors"
	"testing"
	"time"
)

func TestPollReturnsOnceTheConditionHolds(t *testing.T) {
	calls := 0
	err := poll(10*time.Second, func() error {
		calls++
		if calls < 3 {
			return errors.New("not yet")
		}
		return nil
	})
	if err != nil || calls != 3 {
		t.Fatalf("poll = %v after %d calls, want nil after 3", err, calls)
	}
}

func TestPollGivesTheLastReasonAtTheDeadline(t *testing.T) {
	calls := 0
	err := poll(20*time.Millisecond, func() error {
		calls++
		return errors.New("still 2 of 3")
	})
	if err == nil || err.Error() != "still 2 of 3" || calls < 2 {
		t.Fatalf("poll = %v after %d calls, want the condition's last error after several calls", err, calls)
	}
}
