package jobs

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Action is what the engine does to the job message after a decision.
type Action int

// Actions on the job message; the engine sends them after the checkpoint
// write that made the decision durable.
const (
	None     Action = iota
	Ack             // done: remove the message
	Nak             // retry: redeliver after Decision.Delay
	Term            // exhausted or orphaned: remove the message
	Progress        // extend the lock (+WPI)
)

// TerminalKind is how a job ended for its instance.
type TerminalKind string

// Terminal outcomes: only these reach the instance; the waiting token
// parks once and wakes once.
const (
	Done      TerminalKind = "done"      // success, with output
	Errored   TerminalKind = "bpmnError" // a BPMN error for boundaries to catch
	StatusSet TerminalKind = "status"    // a business status to write, then complete
	Failed    TerminalKind = "failed"    // retries exhausted, or the output could not be applied
)

// Failure causes.
const (
	CauseExhausted = "retriesExhausted" // the retry policy gave up
	CauseDataFlow  = "outputMapping"    // the work is done, it must not run again
)

// Terminal is a job's final outcome, applied by the instance.
type Terminal struct {
	Kind      TerminalKind   `msgpack:"kind"`
	Output    map[string]any `msgpack:"output,omitempty"`
	ErrorCode string         `msgpack:"errorCode,omitempty"`
	Message   string         `msgpack:"message,omitempty"`
	Vars      map[string]any `msgpack:"vars,omitempty"`
	Status    string         `msgpack:"status,omitempty"`
	Cause     string         `msgpack:"cause,omitempty"`
	Attempts  int            `msgpack:"attempts,omitempty"`
	// Result is a task listener job's verdict (Done only).
	Result *TaskResult `msgpack:"result,omitempty"`
}

// Env is what Decide may consult besides the state and the report.
type Env struct {
	Now time.Time
	// Mapper and Retry resolve custom Go policies registered with the engine.
	Mapper func(name string) (ErrorMapper, bool)
	Retry  func(name string) (RetryPolicy, bool)
}

// Decision is the result of a worker message.
type Decision struct {
	Verdict  Verdict
	Action   Action
	Delay    time.Duration // for Nak
	Terminal *Terminal     // non-nil when the job is over
	// Changed says st was modified and must be written with the checkpoint.
	Changed bool
}

// Decide fences a worker's message against the job's state and decides it:
// stale deliveries are refused; a new delivery counts every earlier one as
// a failed execution; faults are classified and retried per the policy.
// The caller has checked that d names this job's message (d.Seq). Decide
// updates st in place (see Decision.Changed).
func Decide(st *State, r *Report, d Delivery, env Env) Decision {
	v := Verdict{JobID: st.ID, Kind: r.Kind}
	refuse := func(format string, args ...any) Decision {
		v.Reason = fmt.Sprintf(format, args...)
		return Decision{Verdict: v}
	}
	if d.Count < st.Delivery {
		return refuse("stale delivery %d: the job is at delivery %d, held by another worker", d.Count, st.Delivery)
	}
	if d.Count == st.Nacked {
		// A copy of the report that already sent this delivery back (the
		// worker published it again, or the engine crashed before acking
		// it): acting again would nak whatever delivery the message is on
		// now, since JetStream does not fence stale acks.
		return refuse("delivery %d was already sent back for a retry", d.Count)
	}
	dec := Decision{}
	if d.Count > st.Delivery {
		if st.Delivery > 0 && st.Nacked != st.Delivery {
			st.LastError = fmt.Sprintf("delivery %d: lock expired without a report", st.Delivery)
		}
		if d.Count > st.Delivery+1 {
			st.LastError = fmt.Sprintf("delivery %d: lock expired without a report", d.Count-1)
		}
		st.Delivery, st.Seq = d.Count, d.Seq
		st.LockedAt = env.Now.Add(-st.Policy.LockDuration)
		dec.Changed = true
		// A delivery past the budget may not start; but a worker that ran it
		// anyway (it never checked in) and reports a verdict has done the
		// work, and its verdict stands.
		if failed := int(d.Count) - 1; failed >= st.Budget && !r.Kind.Terminal() {
			return exhausted(st, v, dec, failed, "")
		}
	}
	switch r.Kind {
	case CheckIn:
		v.Accepted = true
	case Extend:
		held := env.Now.Sub(st.LockedAt) + st.Policy.LockDuration
		if st.Policy.MaxLockDuration > 0 && held > st.Policy.MaxLockDuration {
			return refuse("maxLockDuration %s reached: the lock expires and the delivery counts as a failed attempt", st.Policy.MaxLockDuration)
		}
		until := env.Now.Add(st.Policy.LockDuration)
		v.Accepted, v.LockExpiresAt = true, &until
		dec.Action = Progress
	case Release:
		// The holder gives the delivery back unrun: the next delivery must
		// not count it as a failed attempt, so the budget grows by one.
		st.Nacked = d.Count
		st.Budget++
		v.Accepted, v.Reason = true, "released for immediate redelivery"
		dec.Verdict, dec.Action, dec.Changed = v, Nak, true
		return dec
	case Complete:
		dec = complete(st, r, v, dec)
		return dec
	case BpmnError, Status:
		if !st.untrusted(r) {
			t := &Terminal{Kind: Errored, ErrorCode: r.ErrorCode, Message: r.Message, Vars: r.Vars}
			if r.Kind == Status {
				t = &Terminal{Kind: StatusSet, Status: r.Status}
			}
			v.Accepted = true
			dec.Verdict, dec.Action, dec.Terminal = v, Ack, t
			return dec
		}
		// An untrusted worker's verdict is only a raw fault to the engine,
		// which classifies it with its own rules.
		body := map[string]any{"errorCode": r.ErrorCode, "message": r.Message, "status": r.Status}
		return fail(st, &Report{Kind: Fail, Code: r.ErrorCode + r.Status, Body: body}, d, v, dec, env)
	case Fail:
		return fail(st, r, d, v, dec, env)
	}
	dec.Verdict = v
	return dec
}

// engineClassifies reports whether the engine, not the worker, classifies
// this job's faults and owns its retries: the worker has no policy to run
// (EngineAuthoritative, a Go mapper, a kept default) or could not run it.
func (st *State) engineClassifies(r *Report) bool {
	return st.untrusted(r) || st.Kept
}

// untrusted reports whether a bpmnError or status verdict of the worker is
// only a raw fault to the engine. A kept default policy trusts them: the
// worker would have been trusted had the policy been shipped.
func (st *State) untrusted(r *Report) bool {
	return st.Policy.Trust == EngineAuthoritative || st.Policy.Mapper != "" || r.CannotRunPolicy
}

func complete(st *State, r *Report, v Verdict, dec Decision) Decision {
	out := r.Output
	if st.Policy.Trust == EngineAuthoritative || r.CannotRunPolicy || st.Kept {
		m, err := CompileOutputs(st.Policy.Outputs)
		if err == nil {
			out, err = m.Apply(bodyOf(r.Output))
		}
		if err != nil {
			v.Accepted, v.Reason = true, "output mapping failed; the task fails without re-running the job: "+err.Error()
			dec.Verdict, dec.Action = v, Ack
			dec.Terminal = &Terminal{Kind: Failed, Cause: CauseDataFlow, Message: err.Error(), Attempts: int(st.Delivery)}
			return dec
		}
	}
	if out == nil {
		out = map[string]any{}
	}
	v.Accepted = true
	dec.Verdict, dec.Action, dec.Terminal = v, Ack, &Terminal{Kind: Done, Output: out, Result: r.Result}
	return dec
}

func bodyOf(m map[string]any) any {
	if m == nil {
		return map[string]any{}
	}
	return m
}

func fail(st *State, r *Report, d Delivery, v Verdict, dec Decision, env Env) Decision {
	attempt := int(d.Count)
	st.LastError = describe(r)
	dec.Changed = true
	// A worker of a kept default policy that asks for a number of
	// retries (0: none, raise an incident now) is heard as under
	// WorkerTrusted.
	if !st.engineClassifies(r) || (st.Kept && r.Retries != nil && !r.CannotRunPolicy) {
		// The worker retried within its lock; only an explicit retries
		// override sends the job round again.
		if r.Retries == nil || *r.Retries == 0 {
			// Earlier deliveries each ran at least once; this one as often
			// as the worker says.
			return exhausted(st, v, dec, attempt-1+max(r.Attempts, 1), "")
		}
		st.Budget = attempt + *r.Retries
		return retry(st, v, dec, time.Duration(r.RetryBackoffMs)*time.Millisecond, d)
	}
	cls, err := st.classify(r, env)
	if err != nil {
		st.LastError += " (classification failed: " + err.Error() + ")"
		cls = Classification{Kind: Technical}
	}
	switch cls.Kind {
	case BusinessError:
		v.Accepted = true
		dec.Verdict, dec.Action = v, Ack
		dec.Terminal = &Terminal{Kind: Errored, ErrorCode: cls.ErrorCode, Message: cls.Message}
		return dec
	case BusinessStatus:
		v.Accepted = true
		dec.Verdict, dec.Action = v, Ack
		dec.Terminal = &Terminal{Kind: StatusSet, Status: cls.Status}
		return dec
	}
	policy, err := st.Policy.Retry.Policy(env.Retry)
	if err != nil {
		return exhausted(st, v, dec, attempt, "retry policy: "+err.Error())
	}
	backoff, again := policy.Retry(attempt, errors.New(st.LastError))
	if !again || attempt >= st.Budget {
		return exhausted(st, v, dec, attempt, "")
	}
	if r.Retries != nil {
		v.Reason = "retries override ignored: the engine owns retries for this job; "
	}
	return retry(st, v, dec, backoff, d)
}

func (st *State) classify(r *Report, env Env) (Classification, error) {
	f := Fault{Code: r.Code, Body: r.Body}
	if st.Policy.Mapper != "" {
		if env.Mapper == nil {
			return Classification{}, fmt.Errorf("error mapper %q is not registered", st.Policy.Mapper)
		}
		m, ok := env.Mapper(st.Policy.Mapper)
		if !ok {
			return Classification{}, fmt.Errorf("error mapper %q is not registered", st.Policy.Mapper)
		}
		return m.Classify(f)
	}
	m, err := CompileRules(st.Policy.Rules)
	if err != nil {
		return Classification{}, err
	}
	return m.Classify(f)
}

func retry(st *State, v Verdict, dec Decision, backoff time.Duration, d Delivery) Decision {
	st.Nacked = d.Count
	v.Accepted = true
	v.Reason += fmt.Sprintf("technical fault; attempt %d of %d failed, retrying in %s", d.Count, st.Budget, backoff)
	dec.Verdict, dec.Action, dec.Delay = v, Nak, backoff
	return dec
}

func exhausted(st *State, v Verdict, dec Decision, attempts int, why string) Decision {
	last := st.LastError
	if why != "" {
		last = why
	}
	if last == "" {
		last = "no error reported"
	}
	msg := fmt.Sprintf("job %s on topic %q: retries exhausted after %d attempts; last error: %s", st.ID, st.Topic, attempts, last)
	v.Accepted, v.Reason = v.Kind != CheckIn, msg
	dec.Verdict, dec.Action = v, Term
	dec.Terminal = &Terminal{Kind: Failed, Cause: CauseExhausted, Message: msg, Attempts: attempts}
	return dec
}

func describe(r *Report) string {
	s := "fault"
	if r.Code != "" {
		s += " code " + r.Code
	}
	if r.Message != "" {
		s += ": " + r.Message
	}
	if r.Body != nil {
		b, err := json.Marshal(r.Body)
		if err != nil {
			b = []byte(fmt.Sprint(r.Body))
		}
		if len(b) > 200 {
			b = append(b[:200], "…"...)
		}
		s += " body " + string(b)
	}
	return s
}
