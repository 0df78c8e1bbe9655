//go:build unix && !linux

package main

import "syscall"

// setParentDeathSignal does nothing: only Linux has a parent-death signal.
// A command of a worker killed with kill -9 runs on here (docs/reliability.md).
func setParentDeathSignal(*syscall.SysProcAttr) {}
