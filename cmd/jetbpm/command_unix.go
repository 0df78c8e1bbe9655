//go:build unix

package main

import (
	"errors"
	"os"
	"os/exec"
	"syscall"
)

// isolate puts a job's command in a process group of its own and makes
// cancelling it kill the whole group, so a script's children die with it
// when the job's lock is lost. Being its own group also keeps a terminal's
// Ctrl-C away from it: the worker drains on SIGINT and lets it finish.
// Where the system offers one, a parent-death signal kills the command if
// the worker itself is killed: an orphaned command would otherwise run on
// and complete a job that is delivered again to another worker.
func isolate(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	setParentDeathSignal(cmd.SysProcAttr)
	cmd.Cancel = func() error {
		err := syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		if errors.Is(err, syscall.ESRCH) {
			return os.ErrProcessDone
		}
		return err
	}
}
