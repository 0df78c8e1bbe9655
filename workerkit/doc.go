// Package workerkit runs jetbpm external service tasks in Go: it fetches
// the jobs of a topic, runs a handler for each and reports the outcome to
// the engine.
//
// A worker is three calls:
//
//	w, err := workerkit.New(nc, workerkit.Options{Name: "billing-1"})
//	w.Handle("payments", charge, workerkit.Concurrency(8))
//	err = w.Run(ctx) // until ctx is done, then drains the jobs in flight
//
// A handler gets the job's input and returns the task's output, or an
// error saying how the job ended:
//
//	func charge(ctx context.Context, job *workerkit.Job) (map[string]any, error) {
//		switch resp, err := bank.Charge(ctx, job.Input["card"], job.Input["amount"]); {
//		case err != nil:
//			return nil, err // technical: retried per the task's RetryPolicy
//		case resp.Declined:
//			return nil, workerkit.BpmnError("REJECTED", "card declined", nil) // for an error boundary
//		case resp.Status == 404:
//			return nil, workerkit.Fault("404", resp.Body) // the task's ErrorMapper classifies it
//		}
//		return map[string]any{"receipt": resp.ID}, nil
//	}
//
// A Zeebe task listener's handler may return Deny(reason) to refuse the
// user task's transition, or Correct(corrections) to change the task as
// it takes effect; nil accepts it as it is.
//
// FailWith(err, retries, backoff) overrides the task's retry policy for
// one failure: that many more runs after backoff, or with 0 an incident
// now (Zeebe's FailJob with retries; a connector's jobError).
//
// Everything else follows the worker protocol of docs/jobs.md, which the
// worker speaks for the handler:
//
//   - Locks. A fetched job is locked for the task's lock duration. While
//     the handler runs the worker extends the lock every half lock; when
//     the engine refuses (the task's maxLockDuration is reached) the
//     handler's ctx is cancelled and its result is not reported: the job
//     is redelivered and counts as a failed attempt.
//   - Check-in. A redelivered job is executed only after the engine
//     confirms this delivery is current; otherwise it is dropped.
//   - Policy. Under WorkerTrusted (the default) a job whose policy differs
//     from its topic's default carries it and the worker runs it: it maps
//     the output, classifies faults with the task's ErrorMapper rules and
//     retries technical faults within its lock, reporting only the final
//     verdict. A job without a policy (EngineAuthoritative, or the topic's
//     default, which the engine keeps) gets raw reports: the engine
//     classifies faults and retries them by redelivery; a BpmnError or
//     Status is reported as such.
//   - Reports are published with JetStream and de-duplicated by message
//     id; the worker never acknowledges a job message itself.
//
// A panic in a handler is recovered and reported as a technical fault.
// Records for fetch, check-in, extend, report and verdict go to
// Options.Logger with the job, topic and instance ids.
package workerkit
