// Package correlation is the logic of a message partition: where BPMN
// messages meet the subscriptions that wait for them (docs/messages.md).
//
// All the state of one message name and correlation key is one Entry: the
// open subscriptions, oldest first; the buffered messages, first in first
// out, each with the processes it went to; the active instances that a
// message with this key started, per process; a sequence counter; and an
// outbox of effects not yet known to be published. Every operation
// (Publish, Subscribe, Unsubscribe, Reject, StartEnded, Expire) changes the
// entry and appends effects to its outbox; it reads no clock (now is an
// argument) and does no I/O, so the engine can run it under a
// compare-and-set write and publish the effects afterwards, exactly as it
// does for instances (docs/engine.md §5).
//
// The rules, Zeebe's:
//
//   - A message goes to the oldest subscription of each process that has
//     one, and at most once to any process (whatever its version).
//   - It starts an instance of each process whose latest version has a
//     message start event of its name, unless it went to that process
//     already, or, for a non-empty key, an instance that a message with
//     this key started is still active.
//   - With a time to live it stays buffered: a subscription that opens
//     later gets the oldest buffered message not yet gone to its process.
//     A second message with the id of a buffered one is refused.
//   - An instance that was offered a message it can no longer take (its
//     element was left) rejects it: the process counts as not reached,
//     and the message goes to the next subscription of that process, if
//     it is still buffered.
//
// The package imports no NATS: the engine's message partition loop
// (package engine) stores entries, routes commands to them and publishes
// their effects.
package correlation
