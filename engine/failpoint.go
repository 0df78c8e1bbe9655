package engine

// crashPoint reports whether to abandon the batch after instanceID's
// checkpoint write, as if the process died right there: no effects
// published, no events acknowledged. Tests set the hook per engine
// (export_test.go); binaries built with the failpoint tag can also kill
// themselves there (failpoint_kill.go).
func (p *partition) crashPoint(instanceID string) bool {
	killAfterWrite()
	return p.opts.crashAfterWrite != nil && p.opts.crashAfterWrite(instanceID)
}
