// Package incidents defines jetbpm's incident records and facts: the
// durable, operable account of a technical failure the model did not handle
// (docs/incidents.md).
//
// An incident lives in two places. While open, its working state rides on
// the instance checkpoint (package instance), so raising, retrying and
// resolving are decided by the instance's single writer. Its Record — the
// queryable account with history and snapshots — is written to the
// jetbpm-incidents bucket by the engine, so operators list incidents
// without loading instances. This package is the data both share; it does
// no I/O.
package incidents

import (
	"slices"
	"time"
)

// State is where an incident is in its life.
type State string

// Incident states; all but Open are closed.
const (
	Open         State = "open"
	Resolved     State = "resolved"
	DeadLettered State = "deadLettered"
	Overtaken    State = "overtaken"
)

// Closed reports whether s is final.
func (s State) Closed() bool { return s != Open }

// Cause classes (docs/incidents.md §1).
const (
	CauseOperation        = "operation"
	CauseExpression       = "expression"
	CauseDataFlow         = "dataFlow"
	CauseRetriesExhausted = "retriesExhausted"
	CauseBpmnError        = "bpmnError"
	CauseChildFailed      = "childFailed" // a called instance failed technically
)

// Kind names a transition and the fact announcing it.
type Kind string

// Transitions.
const (
	Raised         Kind = "raised"
	RetryScheduled Kind = "retry-scheduled"
	Retried        Kind = "retried"
	ResolvedKind   Kind = "resolved"
	DeadLetterKind Kind = "dead-lettered"
	OvertakenKind  Kind = "overtaken"
)

// Transition is one entry of an incident's history. Seq numbers them per
// incident, from 1, without gaps; the fact announcing it has the same seq.
type Transition struct {
	Seq     int       `msgpack:"seq" json:"seq"`
	Kind    Kind      `msgpack:"kind" json:"kind"`
	Time    time.Time `msgpack:"time" json:"time"`
	Command string    `msgpack:"cmd,omitempty" json:"command,omitempty"`
	Detail  string    `msgpack:"detail,omitempty" json:"detail,omitempty"`
}

// Record is the queryable account of one incident.
type Record struct {
	ID           string       `msgpack:"id" json:"id"`
	Instance     string       `msgpack:"instance" json:"instanceId"`
	ProcessID    string       `msgpack:"process" json:"processId"`
	Version      int          `msgpack:"version" json:"version"`
	Node         string       `msgpack:"node" json:"nodeId"`
	Lineage      []string     `msgpack:"lineage" json:"lineage"`
	CauseClass   string       `msgpack:"causeClass" json:"causeClass"`
	Causes       []string     `msgpack:"causes" json:"causeChain"`
	Attempts     int          `msgpack:"attempts" json:"attempts"`
	FirstFailure time.Time    `msgpack:"first" json:"firstFailureAt"`
	LastFailure  time.Time    `msgpack:"last" json:"lastFailureAt"`
	State        State        `msgpack:"state" json:"state"`
	RetryDue     time.Time    `msgpack:"retryDue,omitempty" json:"retryDueAt,omitzero"`
	History      []Transition `msgpack:"history" json:"history"`
	// Snapshots are the attempts whose variables were captured.
	Snapshots []int `msgpack:"snapshots" json:"snapshots"`
}

// Cause returns the latest cause.
func (r *Record) Cause() string {
	if len(r.Causes) == 0 {
		return ""
	}
	return r.Causes[len(r.Causes)-1]
}

// Outcome returns the transition a command produced, if any.
func (r *Record) Outcome(command string) (Transition, bool) {
	i := slices.IndexFunc(r.History, func(t Transition) bool { return t.Command == command })
	if i < 0 {
		return Transition{}, false
	}
	return r.History[i], true
}

// Fact announces a transition on jetbpm.fact.incident.<process>.<kind>.
type Fact struct {
	FactID     string    `json:"factId"` // <incident>.<seq>
	Seq        int       `json:"seq"`
	Kind       Kind      `json:"kind"`
	Incident   string    `json:"incidentId"`
	Instance   string    `json:"instanceId"`
	ProcessID  string    `json:"processId"`
	Node       string    `json:"nodeId"`
	CauseClass string    `json:"causeClass"`
	Time       time.Time `json:"time"`
	Detail     string    `json:"detail,omitempty"`
}

// Snapshot is the variables visible to the failing node at one raise.
type Snapshot struct {
	Incident string         `msgpack:"incident" json:"incidentId"`
	Attempt  int            `msgpack:"attempt" json:"attempt"`
	Time     time.Time      `msgpack:"time" json:"time"`
	Vars     map[string]any `msgpack:"vars" json:"variables"`
}

// Filter selects records.
type Filter struct {
	Instance  string
	ProcessID string
	Node      string
	Cause     string
	// State: "open", "closed" or "" / "all".
	State string
	// OlderThan keeps incidents whose first failure is at least this old.
	OlderThan time.Duration
}

// Match reports whether r passes f at time now.
func (f Filter) Match(r *Record, now time.Time) bool {
	switch {
	case f.Instance != "" && r.Instance != f.Instance,
		f.ProcessID != "" && r.ProcessID != f.ProcessID,
		f.Node != "" && r.Node != f.Node,
		f.Cause != "" && r.CauseClass != f.Cause,
		f.State == "open" && r.State.Closed(),
		f.State == "closed" && !r.State.Closed(),
		f.OlderThan > 0 && now.Sub(r.FirstFailure) < f.OlderThan:
		return false
	}
	return true
}
