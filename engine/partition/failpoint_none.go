//go:build !failpoint

package partition

// killAfterWrite does nothing: the self-SIGKILL failpoint is only in
// binaries built with the failpoint tag (failpoint_kill.go).
func killAfterWrite() {}
