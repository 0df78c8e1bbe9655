package engine

import (
	"os"
	"strconv"
	"strings"
	"sync/atomic"
)

// crashAfterWrite, when set, is asked after every committed checkpoint
// write; returning true makes the partition behave as if the process died
// right there: no effects published, no events acknowledged (ARCH-2 tests).
var crashAfterWrite func(instanceID string) bool

// The environment variable JETBPM_FAILPOINT=crash-after-checkpoint:N makes
// the process kill itself with SIGKILL after its N-th checkpoint write, for
// crash tests that run jetbpm as a subprocess. Unset in production.
var killAfterWrites = func() int64 {
	v, ok := strings.CutPrefix(os.Getenv("JETBPM_FAILPOINT"), "crash-after-checkpoint:")
	if !ok {
		return 0
	}
	n, _ := strconv.ParseInt(v, 10, 64)
	return n
}()

var writes atomic.Int64

// crashPoint reports whether to abandon the batch after instanceID's write.
func crashPoint(instanceID string) bool {
	if killAfterWrites > 0 && writes.Add(1) == killAfterWrites {
		if self, err := os.FindProcess(os.Getpid()); err == nil {
			_ = self.Kill() // SIGKILL on Unix: no deferred code, no flush
		}
	}
	return crashAfterWrite != nil && crashAfterWrite(instanceID)
}
