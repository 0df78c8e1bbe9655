package jobs

import "time"

// State is the engine's record of one job, kept on the instance checkpoint
// with the wait it belongs to. Decide reads and updates it.
type State struct {
	ID     string `msgpack:"id"`
	Topic  string `msgpack:"topic"`
	Policy Policy `msgpack:"policy"`
	// Kept says the policy is its topic's default and was not shipped
	// with the job: the worker reports as EngineAuthoritative workers do
	// and the engine runs the policy (maps the output, classifies faults,
	// owns retries), while it trusts a bpmnError or status verdict as under
	// WorkerTrusted.
	Kept bool `msgpack:"kept,omitempty"`
	// Budget is the number of executions allowed; a WorkerTrusted retries
	// override moves it.
	Budget int `msgpack:"budget"`
	// Delivery is the highest delivery count of the job message the engine
	// has heard of; Seq is the message's stream sequence (0 until then).
	Delivery uint64    `msgpack:"delivery,omitempty"`
	Seq      uint64    `msgpack:"seq,omitempty"`
	LockedAt time.Time `msgpack:"lockedAt,omitempty"` // assumed start of Delivery's lock
	// Nacked is the delivery the engine last sent back for a retry; any
	// other earlier delivery that ended without a verdict expired.
	Nacked uint64 `msgpack:"nacked,omitempty"`
	// LastError describes the last failed execution, for the exhaustion
	// diagnostic.
	LastError string    `msgpack:"lastError,omitempty"`
	Enqueued  time.Time `msgpack:"enqueued"`
}

// NewState returns the state of a job about to be enqueued.
func NewState(id, topic string, p Policy, now time.Time) *State {
	budget := p.Retry.MaxAttempts
	if budget < 1 {
		budget = 1
	}
	return &State{ID: id, Topic: topic, Policy: p, Budget: budget, Enqueued: now}
}
