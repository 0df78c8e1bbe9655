package engine

// SetCrashAfterWrite installs the crash hook; call it before Open and
// reset it with nil after Close.
func SetCrashAfterWrite(fn func(instanceID string) bool) { crashAfterWrite = fn }
