//go:build unix

package streamstest

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// reservePort takes an exclusive lock on port's file under the temporary
// directory; false when another holds it. The lock goes with release, or
// with the process.
func reservePort(port int) (release func(), ok bool) {
	dir := filepath.Join(os.TempDir(), "jetbpm-test-ports")
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return func() {}, true // no reservations here: the draw alone
	}
	f, err := os.OpenFile(filepath.Join(dir, fmt.Sprint(port)), os.O_CREATE|os.O_RDWR, 0o666)
	if err != nil {
		return func() {}, true
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, false
	}
	return func() { f.Close() }, true
}
