//go:build unix

package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// lockDataDir takes an exclusive lock on dir/jetbpm.lock, so that two jetbpm
// serve processes never share one embedded server's data. The lock file
// holds the owner's pid; the kernel drops the lock when the process ends,
// also on kill -9, so a stale file never blocks a restart.
func lockDataDir(dir string) (release func(), err error) {
	path := filepath.Join(dir, "jetbpm.lock")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("data directory %s: %w", dir, err)
	}
	fd := int(f.Fd())
	if err := syscall.Flock(fd, syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		defer f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			pid := "unknown"
			if b, _ := io.ReadAll(f); len(strings.TrimSpace(string(b))) > 0 {
				pid = strings.TrimSpace(string(b))
			}
			return nil, fmt.Errorf("data directory %s is in use by another jetbpm serve (pid %s)", dir, pid)
		}
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	// Best effort: the pid only makes a second serve's error more helpful.
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return func() {
		syscall.Flock(fd, syscall.LOCK_UN)
		f.Close()
	}, nil
}
