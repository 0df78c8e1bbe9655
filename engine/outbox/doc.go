// Package outbox carries the effects a step leaves in an instance's
// checkpoint to JetStream.
//
// A step never talks to the world: it writes its checkpoint, whose outbox
// lists the effects (a job to queue, a timer to schedule, an incident to
// record, ...). Once the checkpoint is stored, the partition hands the
// outbox to a [Publisher], which passes each effect to the [Handler]
// registered for its kind and waits until JetStream has stored every
// publish. The publisher knows no kind by name: the engine registers the
// handlers of the instance's own effects ([HandleTimers], [HandleCalls],
// [HandleFacts], [HandleIncidents], [HandleTasks]) and each feature
// registers its own (jobs, messages, signals, operations).
//
// Every effect is safe to carry twice, so an outbox is simply published
// again after a crash or a takeover. The publisher's session says whether
// an outbox this node wrote is known to be published: a failure to publish
// starts a new session, and a checkpoint whose outbox names another
// session is published again before its instance steps on
// (docs/engine.md §5).
package outbox
