// Package instance holds the state of one process instance and the step
// function that advances it.
//
// The state is one document (State): tracks (tokens) with lineage, variable
// scopes, the waits the instance is parked on, and an outbox of effects.
// The engine stores it as one checkpoint and changes it only through Start
// and Apply:
//
//	(state, events, now) -> (state', effects)
//
// A step runs every node it can (gateways, scripts, sub-process entry and
// exit) up to the next wait state — a timer, an external job, an in-process
// operation, a join — so a chain of such nodes costs one checkpoint. The
// step does no I/O and runs no user code: time comes from Env.Now, ids from
// a counter in the state. An in-process service task parks on an operation
// wait; the engine runs the operation beside the step (Invoke classifies
// what it returns) and reports the result as an OperationDone event. A step
// is deterministic.
//
// Events are applied at most once. An event that wakes a wait names it
// (Event.Wait); a wait is removed when it is consumed, so a duplicate or
// late event finds nothing to wake and is ignored. Wait ids are built from
// the instance id, the node and an activation counter, so a loop that
// re-enters a node never reuses an id.
//
// Effects (timers to schedule or cancel, jobs to queue, operations to run,
// facts to publish) are appended to State.Outbox; the engine publishes them
// after the checkpoint is written.
//
// Message catches park on message waits whose subscriptions the engine
// routes to its message partitions (Subscribe, Unsubscribe); a Correlate
// or MessageTo event fires them, and a Correlate that comes too late is
// handed back (RejectMessage). See docs/messages.md.
//
// A user task parks on a wait that carries the task (Task); each change
// goes out as the task's whole record (PutTask) and task facts, and task
// commands (UserTaskCommand) claim, assign, update, complete it or throw
// a BPMN error from it. See tasks.go and docs/usertasks.md.
//
// Conditional events park on conditional waits that nothing outside the
// instance knows: the step evaluates them when they open and after each
// node or event that wrote variables they see, outermost scope first
// (conditional.go, docs/conditional-events.md).
//
// A step ends by recording the parallel joins that can never fire
// (State.Stuck): those of a scope whose every token waits at a join, as
// after an operator abandoned a branch's incident (docs/incidents.md).
package instance
