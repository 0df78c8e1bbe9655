package partition

// crashPoint reports whether to abandon the batch after instanceID's
// checkpoint write, as if the process died right there: no effects
// published, no events acknowledged. Tests set the hook per engine
// (Config.CrashAfterWrite); binaries built with the failpoint tag can also kill
// themselves there (failpoint_kill.go).
func (p *Partition) crashPoint(instanceID string) bool {
	killAfterWrite()
	return p.cfg.CrashAfterWrite != nil && p.cfg.CrashAfterWrite(instanceID)
}
