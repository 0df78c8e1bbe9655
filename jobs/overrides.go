package jobs

import (
	"fmt"
	"time"
)

// Overrides is one level of job configuration: a service task's options or
// the engine-wide defaults. Zero fields defer to the level below.
type Overrides struct {
	Trust           Trust         `msgpack:"trust,omitempty"`
	Retry           *RetrySpec    `msgpack:"retry,omitempty"`
	Rules           []Rule        `msgpack:"rules,omitempty"`
	Mapper          string        `msgpack:"mapper,omitempty"`
	Outputs         []OutputRule  `msgpack:"outputs,omitempty"`
	Status          string        `msgpack:"status,omitempty"`
	StatusOverwrite bool          `msgpack:"statusOverwrite,omitempty"`
	LockDuration    time.Duration `msgpack:"lock,omitempty"`
	MaxLockDuration time.Duration `msgpack:"maxLock,omitempty"`
}

// Resolve returns the policy of a job: o's fields over engine's, over the
// batteries' defaults (DefaultRetrySpec; WorkerTrusted; 60 s lock,
// 30 min cap). Rules and a custom mapper come as a pair from one level.
func (o Overrides) Resolve(engine Overrides) Policy {
	p := Policy{
		Trust: first(o.Trust, engine.Trust, WorkerTrusted), Retry: DefaultRetrySpec,
		Outputs: o.Outputs, Status: o.Status, StatusOverwrite: o.StatusOverwrite,
		LockDuration:    first(o.LockDuration, engine.LockDuration, DefaultLockDuration),
		MaxLockDuration: first(o.MaxLockDuration, engine.MaxLockDuration, DefaultMaxLockDuration),
	}
	switch {
	case o.Retry != nil:
		p.Retry = *o.Retry
	case engine.Retry != nil:
		p.Retry = *engine.Retry
	}
	switch {
	case len(o.Rules) > 0 || o.Mapper != "":
		p.Rules, p.Mapper = o.Rules, o.Mapper
	default:
		p.Rules, p.Mapper = engine.Rules, engine.Mapper
	}
	if p.Mapper != "" {
		p.Trust = EngineAuthoritative // a Go mapper cannot ship to a worker
	}
	return p
}

// Validate checks one level of configuration; errors say what is wrong.
func (o Overrides) Validate() error {
	switch o.Trust {
	case "", WorkerTrusted, EngineAuthoritative:
	default:
		return fmt.Errorf("worker trust %q is neither %q nor %q", o.Trust, WorkerTrusted, EngineAuthoritative)
	}
	if o.Retry != nil {
		if err := o.Retry.Validate(); err != nil {
			return err
		}
	}
	if err := ValidateRules(o.Rules); err != nil {
		return err
	}
	if _, err := CompileOutputs(o.Outputs); err != nil {
		return err
	}
	for i, r := range o.Rules {
		if r.Outcome == BusinessStatus && o.Status == "" {
			return fmt.Errorf("error mapper rule %d yields a status but the task has no WithStatus variable", i)
		}
	}
	switch {
	case o.LockDuration < 0 || o.MaxLockDuration < 0:
		return fmt.Errorf("lock durations must not be negative")
	case o.LockDuration > 0 && o.MaxLockDuration > 0 && o.MaxLockDuration < o.LockDuration:
		return fmt.Errorf("maxLockDuration %s is shorter than lockDuration %s", o.MaxLockDuration, o.LockDuration)
	}
	return nil
}

func first[T comparable](vals ...T) T {
	var zero T
	for _, v := range vals {
		if v != zero {
			return v
		}
	}
	return zero
}
