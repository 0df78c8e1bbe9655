// Package testwait waits, in tests, for a condition that has nothing to
// signal on: a record another process writes, a fact published just after
// the checkpoint a test saw, a port that starts listening. It polls with a
// growing pause and fails the test loudly at a deadline, with the last
// reason the condition gave:
//
//	testwait.Until(t, 10*time.Second, "three incidents listed", func() error {
//		if n := len(list()); n < 3 {
//			return fmt.Errorf("%d listed", n)
//		}
//		return nil
//	})
//
// Use it only where there is no event to wait on; a channel or a
// subscription is better where one exists.
package testwait

import (
	"testing"
	"time"
)

// The pause between polls starts at minPause and doubles up to maxPause.
const (
	minPause = 5 * time.Millisecond
	maxPause = 100 * time.Millisecond
)

// Until calls cond until it returns nil. If timeout passes first, it fails
// t with what and cond's last error.
func Until(t testing.TB, timeout time.Duration, what string, cond func() error) {
	t.Helper()
	if err := poll(timeout, cond); err != nil {
		t.Fatalf("timed out after %s waiting for %s: %v", timeout, what, err)
	}
}

// True is Until for a condition with no reason to give.
func True(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	if !cond() {
		Until(t, timeout, what, func() error {
			if cond() {
				return nil
			}
			return errNotYet
		})
	}
}

type notYet struct{}

func (notYet) Error() string { return "the condition never held" }

var errNotYet error = notYet{}

// poll returns nil once cond does, or cond's last error at the deadline.
func poll(timeout time.Duration, cond func() error) error {
	deadline := time.Now().Add(timeout)
	for pause := minPause; ; pause = min(2*pause, maxPause) {
		err := cond()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return err
		}
		time.Sleep(min(pause, max(time.Until(deadline), time.Millisecond)))
	}
}
