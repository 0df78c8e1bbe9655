package workerkit

import "github.com/nats-io/nats.go/jetstream"

// WrapJetStream puts a fault-injecting wrapper around the worker's
// JetStream handle, for tests of what a worker does when NATS misbehaves.
func WrapJetStream(w *Worker, wrap func(jetstream.JetStream) jetstream.JetStream) { w.js = wrap(w.js) }
