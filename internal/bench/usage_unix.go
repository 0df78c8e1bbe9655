//go:build unix

package bench

import (
	"runtime"
	"syscall"
	"time"
)

func readUsage() usage {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return usage{}
	}
	rss := int64(ru.Maxrss) * 1024 // KiB on Linux and the BSDs
	if runtime.GOOS == "darwin" {
		rss = int64(ru.Maxrss) // bytes on macOS
	}
	return usage{cpu: time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), peakRSS: rss}
}
