// Package deploy keeps the deployed processes in the definitions bucket
// (KV jetbpm-definitions) and caches them.
//
// Each version of a process is a key of its own (def.<process>.<version>),
// written once and never changed, so the cache of parsed models needs no
// invalidation; a version pointer (latest.<process>, the version and the
// definition's hash) names the latest, and is the only key read fresh. A
// deploy writes the new versions, their BPMN sources
// (src.<process>.<version>, gzipped), the pointers and the entries of the
// start indexes (which processes a message or a signal starts) in one
// atomic batch whose pointer writes expect the revisions
// the deploy read: two deploys racing for a process cannot both win, and
// the loser plans again from the new pointers (Definitions.Deploy). A
// process deployed again unchanged keeps its version.
//
// See docs/engine.md §7.
package deploy
