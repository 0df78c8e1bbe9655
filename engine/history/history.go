// Package history names the history levels of an engine node: which facts
// it writes at all (docs/engine.md §8.2). Facts are history — how
// integrations and the console's timeline hear of what happened — while
// checkpoints, incident records and task records are state and are written
// at every level.
//
//	lvl, err := history.Parse("incidents")
//	lvl.Keeps(history.Task) // false: task facts are not written
//
// The zero Level is Full.
package history

import "fmt"

// A Level says which families of facts an engine node writes.
type Level string

// The levels, from most to least written.
const (
	// Full writes every fact (the default; the zero Level).
	Full Level = "full"
	// Instances writes instance lifecycle and incident facts, no user
	// task or message facts.
	Instances Level = "instances"
	// Incidents writes incident facts only: the contract integrations are
	// promised.
	Incidents Level = "incidents"
)

// The families of facts, as they appear in a fact's subject
// (jetbpm.fact.<family>.…).
const (
	Instance = "instance"
	Incident = "incident"
	Task     = "task"
	Message  = "message"
)

// Levels lists every level, most written first.
var Levels = []Level{Full, Instances, Incidents}

// Parse reads a level's name; "" is Full.
func Parse(s string) (Level, error) {
	if s == "" {
		return Full, nil
	}
	for _, l := range Levels {
		if string(l) == s {
			return l, nil
		}
	}
	return "", fmt.Errorf("history level %q: use full, instances or incidents", s)
}

// String returns the level's name; the zero Level is "full".
func (l Level) String() string {
	if l == "" {
		return string(Full)
	}
	return string(l)
}

// Keeps says whether a node at this level writes facts of family.
func (l Level) Keeps(family string) bool {
	switch l {
	case "", Full:
		return true
	case Instances:
		return family == Instance || family == Incident
	default:
		return family == Incident
	}
}

// Leaves lists the families of facts the level does not write, for a
// message that says what a lower level cannot show.
func (l Level) Leaves() []string {
	var out []string
	for _, f := range []string{Instance, Task, Message} {
		if !l.Keeps(f) {
			out = append(out, f)
		}
	}
	return out
}
