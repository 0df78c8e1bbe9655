//go:build failpoint

package partition

import (
	"os"
	"strconv"
	"strings"
	"sync/atomic"
)

// With the failpoint build tag, the environment variable
// JETBPM_FAILPOINT=crash-after-checkpoint:N makes the process kill itself
// with SIGKILL after its N-th checkpoint write, for crash tests that run
// jetbpm as a subprocess. Shipped binaries are built without the tag.
var killAfterWrites = func() int64 {
	v, ok := strings.CutPrefix(os.Getenv("JETBPM_FAILPOINT"), "crash-after-checkpoint:")
	if !ok {
		return 0
	}
	n, _ := strconv.ParseInt(v, 10, 64)
	return n
}()

var writes atomic.Int64

func killAfterWrite() {
	if killAfterWrites > 0 && writes.Add(1) == killAfterWrites {
		if self, err := os.FindProcess(os.Getpid()); err == nil {
			_ = self.Kill() // SIGKILL on Unix: no deferred code, no flush
		}
	}
}
