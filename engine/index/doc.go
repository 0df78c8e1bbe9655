// Package index keeps one engine node's in-memory views of two buckets, so
// that a list neither reads every record nor needs a database beside
// JetStream:
//
//   - Instances, of the instances bucket: per instance, the process,
//     status and start time that filtering and ordering need, taken from
//     the summary headers package checkpoint writes with every checkpoint.
//     An ordered, headers-only consumer feeds it: the last message of every
//     key first (so a node that starts, or restarts, rebuilds it), then
//     every write as it happens.
//   - Tasks, of the tasks bucket: per user task record, the fields a
//     TaskFilter names and the record's bytes, decoded only for the page
//     returned. A watch of every key feeds it the same way.
//
// Both are derived and never authoritative. Instances.Sync waits (bounded
// by MaxCatchUp) until the index has read the bucket up to the newest
// message it held when Sync began, so a list that syncs first sees every
// write made before it began; its caller re-checks the filter against each
// checkpoint it reads, so an instance whose status moved on is left out
// rather than shown wrongly. Tasks.Wait waits (bounded the same way) for
// the watch's first pass; a task shows a moment after the step that wrote
// its record. See docs/engine.md, "Listing instances", and
// docs/usertasks.md §2.
package index
