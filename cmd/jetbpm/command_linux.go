package main

import "syscall"

// setParentDeathSignal has the kernel SIGKILL the command when the thread
// that started it ends. Go never ends a thread the worker started a command
// on (no goroutine here locks its thread), so in practice that is when the
// worker process ends, kill -9 included.
func setParentDeathSignal(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGKILL }
