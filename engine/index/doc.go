// Package index keeps one engine node's in-memory view of the instances
// bucket, so that a list of instances neither reads every checkpoint nor
// needs a database beside JetStream.
//
// An Instances index is fed by an ordered, headers-only consumer of the
// bucket's stream: first the last message of every key (so a node that
// starts, or restarts, rebuilds it), then every write as it happens. It
// keeps, per instance, what filtering and ordering need (process, status,
// start time), taken from the summary headers package checkpoint writes
// with every checkpoint.
//
// The index is derived and never authoritative: the caller re-checks its
// filter against each checkpoint it reads, so an instance whose status
// moved on since the index heard of it is left out rather than shown
// wrongly. Sync waits (bounded by MaxCatchUp) until the index has read the
// bucket up to the newest message it held when Sync began, so a list that
// syncs first sees every write made before it began. See docs/engine.md,
// "Listing instances".
package index
