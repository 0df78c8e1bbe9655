package workerkit

import (
	"context"
	"time"
)

// Job is one execution of an external service task, as a handler sees it.
type Job struct {
	// ID is stable across redeliveries and retries of one activation of
	// the task: the handler's idempotency key.
	ID        string
	Topic     string
	Instance  string // the process instance id
	ProcessID string
	Node      string // the service task's id
	// Input is the task's input: its input mappings, or every variable
	// visible to the task. Numbers are float64, as encoding/json decodes
	// them. Each execution gets its own copy.
	Input map[string]any
	// Headers are the task's static headers (model.WithHeaders).
	Headers map[string]string
	// Delivery is the job message's delivery count: 1 the first time, more
	// after a lock expired or the engine scheduled a retry.
	Delivery int
	// Attempt numbers this execution from 1: the delivery count plus the
	// retries this worker made within the delivery (WorkerTrusted).
	Attempt int
	// LockDuration is the task's lock; the worker extends it while the
	// handler runs.
	LockDuration time.Duration
	// EnqueuedAt is when the engine queued the job (by its clock), or
	// else when the jobs stream stored it (by the NATS server's).
	EnqueuedAt time.Time
	// DeliveredAt is when this worker received the job's message (its
	// clock): the lock runs from here.
	DeliveredAt time.Time
}

// HandlerFunc runs one job. It returns the task's output (nil is an empty
// output), or an error: BpmnError, Status, Fault or any other error for a
// technical fault. ctx is cancelled when the worker loses the job's lock
// or gives up waiting for it at shutdown; the result is then discarded.
type HandlerFunc func(ctx context.Context, job *Job) (map[string]any, error)

// HandleOption configures one Handle call.
type HandleOption func(*handleConfig)

type handleConfig struct {
	concurrency int
}

// Concurrency lets n jobs of the topic run at once (default 1).
func Concurrency(n int) HandleOption {
	return func(c *handleConfig) { c.concurrency = max(n, 1) }
}
