package jobs

import (
	"fmt"
	"maps"
	"slices"
)

// Defaults are the engine-wide levels of job configuration, under every
// task's own options: All applies to jobs on any topic, and Topics[t] to
// jobs on topic t, its fields over All's. The zero value defers everything
// to the batteries' defaults.
//
// A topic level lets one engine give a slow topic a longer lock or a
// flaky dependency its own retry policy without touching the models that
// use it:
//
//	jobs.Defaults{
//		All:    jobs.Overrides{Trust: jobs.EngineAuthoritative},
//		Topics: map[string]jobs.Overrides{"reports": {LockDuration: 10 * time.Minute}},
//	}
type Defaults struct {
	All    Overrides
	Topics map[string]Overrides
}

// For returns the engine-wide level of a job on topic, for
// Overrides.Resolve.
func (d Defaults) For(topic string) Overrides {
	t, ok := d.Topics[topic]
	if !ok {
		return d.All
	}
	return t.Over(d.All)
}

// Validate checks every level, and that each topic's resolved lock fits
// under its resolved cap. Errors name the topic.
func (d Defaults) Validate() error {
	if err := d.All.Validate(); err != nil {
		return err
	}
	if err := checkLock(Overrides{}.Resolve(d.All)); err != nil {
		return err
	}
	for _, topic := range slices.Sorted(maps.Keys(d.Topics)) {
		if topic == "" {
			return fmt.Errorf("a topic's defaults have an empty topic name")
		}
		if err := d.Topics[topic].Validate(); err != nil {
			return fmt.Errorf("topic %q: %w", topic, err)
		}
		if err := checkLock(Overrides{}.Resolve(d.For(topic))); err != nil {
			return fmt.Errorf("topic %q: %w", topic, err)
		}
	}
	return nil
}

// checkLock refuses a lock longer than the cap on one delivery's lock time,
// where the two come from different levels (one level's pair is checked by
// Overrides.Validate).
func checkLock(p Policy) error {
	if p.MaxLockDuration < p.LockDuration {
		return fmt.Errorf("lockDuration %s is longer than maxLockDuration %s", p.LockDuration, p.MaxLockDuration)
	}
	return nil
}

// Over lays o on below, one level of configuration on the one under it:
// each field o sets wins, the others are below's. Rules and a custom mapper
// come as a pair from one level, as do a status variable and its overwrite
// flag.
func (o Overrides) Over(below Overrides) Overrides {
	r := below
	if o.Trust != "" {
		r.Trust = o.Trust
	}
	if o.Retry != nil {
		r.Retry = o.Retry
	}
	if len(o.Rules) > 0 || o.Mapper != "" {
		r.Rules, r.Mapper = o.Rules, o.Mapper
	}
	if len(o.Outputs) > 0 {
		r.Outputs = o.Outputs
	}
	if o.Status != "" {
		r.Status, r.StatusOverwrite = o.Status, o.StatusOverwrite
	}
	if o.LockDuration != 0 {
		r.LockDuration = o.LockDuration
	}
	if o.MaxLockDuration != 0 {
		r.MaxLockDuration = o.MaxLockDuration
	}
	return r
}
