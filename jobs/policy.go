package jobs

import (
	"slices"
	"time"
)

// Trust says who runs a job's policy (docs/jobs.md §4).
type Trust string

const (
	// WorkerTrusted ships the policy with the job (unless it is the
	// topic's default: see State.Kept): the worker maps its
	// output, classifies its faults, retries within its lock and reports a
	// verdict. The default.
	WorkerTrusted Trust = "workerTrusted"
	// EngineAuthoritative sends the worker no policy: it reports raw
	// {code, body} and the engine classifies and decides retries.
	EngineAuthoritative Trust = "engineAuthoritative"
)

// Policy is the resolved outcome policy of one job, stored with the job's
// state and, under WorkerTrusted, shipped to the worker when it differs
// from its topic's default.
type Policy struct {
	Trust   Trust        `msgpack:"trust" json:"trust"`
	Retry   RetrySpec    `msgpack:"retry" json:"retry"`
	Rules   []Rule       `msgpack:"rules,omitempty" json:"rules,omitempty"`
	Outputs []OutputRule `msgpack:"outputs,omitempty" json:"outputs,omitempty"`
	// Status names the variable a Status outcome writes (WithStatus);
	// StatusOverwrite allows replacing an existing value.
	Status          string `msgpack:"status,omitempty" json:"status,omitempty"`
	StatusOverwrite bool   `msgpack:"statusOverwrite,omitempty" json:"statusOverwrite,omitempty"`
	// Mapper names a custom Go ErrorMapper registered with the engine; it
	// runs engine-side only, so it forces EngineAuthoritative.
	Mapper string `msgpack:"mapper,omitempty" json:"-"`
	// LockDuration and MaxLockDuration are the topic's lock and the cap on
	// one delivery's total lock time (docs/jobs.md §3).
	LockDuration    time.Duration `msgpack:"lock" json:"-"`
	MaxLockDuration time.Duration `msgpack:"maxLock" json:"-"`
}

// Equal reports whether p and q are the same policy.
func (p Policy) Equal(q Policy) bool {
	return p.Trust == q.Trust && p.Retry == q.Retry && slices.Equal(p.Rules, q.Rules) &&
		slices.Equal(p.Outputs, q.Outputs) && p.Status == q.Status && p.StatusOverwrite == q.StatusOverwrite &&
		p.Mapper == q.Mapper && p.LockDuration == q.LockDuration && p.MaxLockDuration == q.MaxLockDuration
}

// Defaults of the two-level configuration (engine-wide options override
// them, per-service options override those).
const (
	DefaultLockDuration    = 60 * time.Second
	DefaultMaxLockDuration = 30 * time.Minute
)

// RetryKind names a retry battery.
type RetryKind string

// The batteries: the retry policies that ship with jetbpm.
const (
	RetryNone        RetryKind = "none"
	RetryFixed       RetryKind = "fixed"
	RetryExponential RetryKind = "exponential"
	// RetryCustom names a Go RetryPolicy registered with the engine.
	RetryCustom RetryKind = "custom"
)

// RetryParams are the parameters each retry kind takes besides its kind,
// by the names the declarative forms use (<jetbpm:retryPolicy> attributes,
// serve --config keys): every decoder of a retry policy checks against it.
var RetryParams = map[RetryKind][]string{
	RetryNone:        {"maxAttempts"},
	RetryFixed:       {"maxAttempts", "delay"},
	RetryExponential: {"maxAttempts", "base", "cap", "jitter"},
	RetryCustom:      {"maxAttempts", "name"},
}

// RetrySpec is a RetryPolicy as data. MaxAttempts counts executions: 3 =
// the first + 2 retries.
type RetrySpec struct {
	Kind        RetryKind     `msgpack:"kind" json:"kind"`
	MaxAttempts int           `msgpack:"maxAttempts" json:"maxAttempts"`
	Delay       time.Duration `msgpack:"delay,omitempty" json:"-"`                 // fixed
	Base        time.Duration `msgpack:"base,omitempty" json:"-"`                  // exponential: first backoff
	Cap         time.Duration `msgpack:"cap,omitempty" json:"-"`                   // exponential: largest backoff
	Jitter      float64       `msgpack:"jitter,omitempty" json:"jitter,omitempty"` // ±fraction, 0.2 = ±20%
	Name        string        `msgpack:"name,omitempty" json:"-"`                  // custom
}

// OutcomeKind is what a fault is classified as.
type OutcomeKind string

// Outcome kinds of an error mapper rule.
const (
	Technical      OutcomeKind = "technical"
	BusinessError  OutcomeKind = "bpmnError"
	BusinessStatus OutcomeKind = "status"
)

// Rule is one ErrorMapper rule: it matches when Code (if set) equals the
// fault's code and When (if set), an expr-lang predicate over `code` and
// `body`, holds. The first matching rule decides the outcome.
type Rule struct {
	Code    string      `msgpack:"code,omitempty" json:"code,omitempty"`
	When    string      `msgpack:"when,omitempty" json:"when,omitempty"`
	Outcome OutcomeKind `msgpack:"outcome" json:"outcome"`
	// ErrorCode and Message are a BusinessError's.
	ErrorCode string `msgpack:"errorCode,omitempty" json:"errorCode,omitempty"`
	Message   string `msgpack:"message,omitempty" json:"message,omitempty"`
	// Value is a BusinessStatus's literal value; ValueFrom an expression
	// over `code` and `body` that computes it instead.
	Value     string `msgpack:"value,omitempty" json:"value,omitempty"`
	ValueFrom string `msgpack:"valueFrom,omitempty" json:"valueFrom,omitempty"`
}

// OutputRule maps part of a Complete payload to a variable: Path is an
// expr-lang expression over `body` (e.g. `body.data.id`). A Required rule
// whose path yields nil is a data-flow failure: an incident, and the job
// is not run again.
type OutputRule struct {
	Path     string `msgpack:"path" json:"path"`
	Variable string `msgpack:"var" json:"variable"`
	Required bool   `msgpack:"required,omitempty" json:"required,omitempty"`
}
