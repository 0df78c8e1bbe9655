// Package checkpoint is how an instance is stored and addressed: its
// checkpoint in the instances KV bucket (read, and written by
// compare-and-set with a summary of the instance in the message's
// headers), the rules for an instance id, and the Envelope every message
// on the events stream carries to one instance.
//
// A checkpoint write is a raw publish to the bucket's subject with an
// expected last subject sequence, so partitions pipeline their writes
// (PublishMsgAsync) and a write from a stale revision is still refused
// (IsConflict). See docs/engine.md §2 and §6.
package checkpoint
