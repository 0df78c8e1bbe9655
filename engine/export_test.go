package engine

// CrashAfterWrite installs a crash hook on opts: after each committed
// checkpoint write the engine asks fn, and true makes the partition behave
// as if the process died right there.
func CrashAfterWrite(opts *Options, fn func(instanceID string) bool) { opts.crashAfterWrite = fn }
