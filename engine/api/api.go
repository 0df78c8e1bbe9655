// Package api exposes an engine over NATS request/reply, so any NATS client
// (and the jetbpm CLI) can deploy, list and read processes, start, read
// and cancel instances, list
// and operate incidents, publish messages, and list and work user tasks.
//
// Every operation has a subject under jetbpm.api (see streams.APISubject)
// and takes and returns JSON. Engine nodes serve in the queue group
// streams.EngineQueue: each request is answered by one node. A reply is
// either {"result": ...} or {"error": {"code": ..., "message": ...}} with
// code one of not_found, invalid, finished, too_large, duplicate,
// no_subscription, conflict, internal.
// docs/api.md lists the operations and their bodies.
package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jetbpm/jetbpm/engine"
	"github.com/jetbpm/jetbpm/engine/instance"
	"github.com/jetbpm/jetbpm/engine/lost"
	"github.com/jetbpm/jetbpm/engine/storecheck"
	"github.com/jetbpm/jetbpm/incidents"
)

// Operation names; the subject is streams.APISubject(name).
const (
	OpDeploy         = "deploy"
	OpStart          = "start"
	OpInstanceGet    = "instance.get"
	OpInstanceList   = "instance.list"
	OpInstanceCancel = "instance.cancel"
	// OpInstanceCompensate is the operator's "abandon, then compensate"
	// (docs/compensation.md §4).
	OpInstanceCompensate = "instance.compensate"
	// OpInstanceSetVars writes variables to an active instance's root
	// scope (engine.Engine.SetVariables).
	OpInstanceSetVars = "instance.setVariables"
	// OpInstanceTrigger moves on a token waiting at a plain receive task
	// (engine.Engine.Trigger).
	OpInstanceTrigger = "instance.trigger"

	OpIncidentList    = "incident.list"
	OpIncidentGet     = "incident.get"
	OpIncidentRetry   = "incident.retry"
	OpIncidentResolve = "incident.resolve"
	OpIncidentAbandon = "incident.abandon"

	OpMessagePublish   = "message.publish"
	OpMessageCorrelate = "message.correlate"

	// OpStoreCheck checks the store for damage now (the marks, then the
	// cross-check), records what it finds, and lists every damage record.
	OpStoreCheck = "store.check"
	// OpStoreRecords lists the damage records without checking (what the
	// console's banner reads on every page).
	OpStoreRecords = "store.records"
	// OpStoreDismiss and OpStoreRecreate are an operator's actions on a
	// damage record: accept what it names as lost (with a reason), or
	// start a new instance in place of a lost one.
	OpStoreDismiss  = "store.dismiss"
	OpStoreRecreate = "store.recreate"

	// OpClusterStatus answers the engine nodes, which partitions each
	// holds and each partition's backlog (docs/engine.md §6.1).
	OpClusterStatus = "cluster.status"
)

// DeployRequest carries BPMN XML documents.
type DeployRequest struct {
	Files []File `json:"files"`
}

// File is one BPMN document.
type File struct {
	Name string `json:"name"`
	XML  string `json:"xml"`
}

// DeployResponse lists what each process became.
type DeployResponse struct {
	Deployments []engine.Deployment `json:"deployments"`
}

// StartRequest starts an instance. Version 0 means the latest; ID is an
// optional caller-chosen instance id.
type StartRequest struct {
	ProcessID string          `json:"processId"`
	Version   int             `json:"version,omitempty"`
	ID        string          `json:"id,omitempty"`
	Vars      json.RawMessage `json:"vars,omitempty"`
	// BusinessKey is stored on the instance; a message published with
	// this business key reaches its catches that have no correlation key.
	BusinessKey string `json:"businessKey,omitempty"`
}

// StartResponse names the new instance.
type StartResponse struct {
	ID string `json:"id"`
}

// InstanceRequest names an instance.
type InstanceRequest struct {
	ID     string `json:"id"`
	Reason string `json:"reason,omitempty"`
}

// CompensateRequest asks to compensate an instance: every completion of
// its journal, or Node's only, then the instance ends terminated.
type CompensateRequest struct {
	ID   string `json:"id"`
	Node string `json:"node,omitempty"`
}

// SetVarsRequest writes Vars, a JSON object, to the instance's root
// scope. RequestID, when set, makes a retried request apply once.
type SetVarsRequest struct {
	ID        string          `json:"id"`
	Vars      json.RawMessage `json:"vars"`
	RequestID string          `json:"requestId,omitempty"`
}

// TriggerRequest moves on the token waiting at plain receive task Node
// ("": the instance's only one); Vars, a JSON object, are the task's
// results. RequestID, when set, makes a retried request apply once.
type TriggerRequest struct {
	ID        string          `json:"id"`
	Node      string          `json:"node,omitempty"`
	Vars      json.RawMessage `json:"vars,omitempty"`
	RequestID string          `json:"requestId,omitempty"`
}

// ListRequest filters instances.
type ListRequest struct {
	ProcessID string `json:"processId,omitempty"`
	Status    string `json:"status,omitempty"`
	Limit     int    `json:"limit,omitempty"`
}

// InstanceStatuses are the values of ListRequest.Status: "active" includes
// the instances with open incidents, "incident" lists only those.
var InstanceStatuses = []string{"active", "incident", "completed", "failed", "terminated"}

// Filter turns the request into the engine's filter.
func (r ListRequest) Filter() (engine.Filter, error) {
	f := engine.Filter{ProcessID: r.ProcessID, Status: instance.Status(r.Status), Limit: r.Limit}
	if r.Status != "" && !slices.Contains(InstanceStatuses, r.Status) {
		return f, fmt.Errorf("%w: status %q: want one of %s", engine.ErrInvalid, r.Status, strings.Join(InstanceStatuses, ", "))
	}
	if r.Limit < 0 {
		return f, fmt.Errorf("%w: limit %d: want 0 (all) or more", engine.ErrInvalid, r.Limit)
	}
	return f, nil
}

// ListResponse holds the matching instances.
type ListResponse struct {
	Instances []*engine.InstanceView `json:"instances"`
}

// IncidentListRequest filters incidents; every field is optional. State is
// open, closed or all (the default); OlderThan keeps incidents whose first
// failure is at least that old: a Go duration ("90m", "36h") or whole days
// ("7d"). Limit pages the list (0: every match); After and Before are the
// cursors of an earlier answer (its Next and Prev) naming where the page
// starts or ends (incidentpage.go).
type IncidentListRequest struct {
	Instance  string `json:"instance,omitempty"`
	Process   string `json:"process,omitempty"`
	Node      string `json:"node,omitempty"`
	Cause     string `json:"cause,omitempty"`
	State     string `json:"state,omitempty"`
	OlderThan string `json:"olderThan,omitempty"`
	Limit     int    `json:"limit,omitempty"`
	After     string `json:"after,omitempty"`
	Before    string `json:"before,omitempty"`
}

// IncidentListResponse holds the matching records, oldest first failure
// first (then by id). Total counts the matches on every page; Next, set
// when more records follow the page, is the After of the next page; Prev,
// set when records precede it, the Before of the previous one.
type IncidentListResponse struct {
	Incidents []*incidents.Record `json:"incidents"`
	Total     int                 `json:"total"`
	Next      string              `json:"next,omitempty"`
	Prev      string              `json:"prev,omitempty"`
}

// IncidentRequest names an incident; Vars (a JSON object) are set by
// incident.resolve before the instance continues.
type IncidentRequest struct {
	ID   string          `json:"id"`
	Vars json.RawMessage `json:"vars,omitempty"`
}

// IncidentStates are the values of IncidentListRequest.State.
var IncidentStates = []string{"open", "closed", "all"}

// IncidentCauses are the values of IncidentListRequest.Cause.
var IncidentCauses = []string{
	incidents.CauseOperation, incidents.CauseExpression, incidents.CauseDataFlow,
	incidents.CauseRetriesExhausted, incidents.CauseBpmnError, incidents.CauseChildFailed,
}

// ParseAge parses an incident age: a Go duration ("90m", "36h") or whole
// days ("7d"). It must not be negative.
func ParseAge(s string) (time.Duration, error) {
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(days)
		if err != nil || n < 0 || n > 100_000 {
			return 0, fmt.Errorf("age %q: want a duration such as 90m, 36h or 7d", s)
		}
		return time.Duration(n) * 24 * time.Hour, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("age %q: want a duration such as 90m, 36h or 7d", s)
	}
	if d < 0 {
		return 0, fmt.Errorf("age %q must not be negative", s)
	}
	return d, nil
}

// Filter turns the request into the engine's filter.
func (r IncidentListRequest) Filter() (incidents.Filter, error) {
	f := incidents.Filter{Instance: r.Instance, ProcessID: r.Process, Node: r.Node, Cause: r.Cause, State: r.State}
	if r.State != "" && !slices.Contains(IncidentStates, r.State) {
		return f, fmt.Errorf("%w: state %q: want one of %s", engine.ErrInvalid, r.State, strings.Join(IncidentStates, ", "))
	}
	if r.Cause != "" && !slices.Contains(IncidentCauses, r.Cause) {
		return f, fmt.Errorf("%w: cause %q: want one of %s", engine.ErrInvalid, r.Cause, strings.Join(IncidentCauses, ", "))
	}
	if r.OlderThan != "" {
		d, err := ParseAge(r.OlderThan)
		if err != nil {
			return f, fmt.Errorf("%w: olderThan: %v", engine.ErrInvalid, err)
		}
		f.OlderThan = d
	}
	return f, nil
}

// reply is the envelope of every response.
type reply struct {
	Result json.RawMessage `json:"result,omitempty"`
	Error  *Error          `json:"error,omitempty"`
}

// Error is an operation's failure as sent over the wire. It matches the
// engine's sentinel errors with errors.Is.
type Error struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	// Problems are a refused deploy's problems, each with its file,
	// line and element (engine.Problems).
	Problems []engine.Problem `json:"problems,omitempty"`
}

func (e *Error) Error() string { return e.Message }

// Is maps wire codes back to engine errors.
func (e *Error) Is(target error) bool {
	for _, c := range codes {
		if e.Code == c.code && target == c.err {
			return true
		}
	}
	return false
}

// codes are the error codes of the wire, most specific first: an error
// gets the code of the first sentinel it matches.
var codes = []struct {
	code string
	err  error
}{
	{"duplicate", engine.ErrDuplicate},
	{"no_subscription", engine.ErrNoSubscription},
	{"conflict", engine.ErrConflict},
	{"not_found", engine.ErrNotFound},
	{"invalid", engine.ErrInvalid},
	{"finished", engine.ErrFinished},
	{"too_large", engine.ErrTooLarge},
}

func toError(err error) *Error {
	for _, c := range codes {
		if errors.Is(err, c.err) {
			return &Error{Code: c.code, Message: err.Error(), Problems: engine.Problems(err)}
		}
	}
	return &Error{Code: "internal", Message: err.Error()}
}

// DefaultTimeout bounds a request when the caller's context has no deadline.
const DefaultTimeout = 30 * time.Second

// StoreCheckResponse is what a store check found and the damage records
// (docs/reliability.md, "A damaged store"): open ones make the store
// degraded until an operator acts on them.
type StoreCheckResponse struct {
	Report  storecheck.Report `json:"report"`
	Records []lost.Record     `json:"records"`
	// Open counts the open records.
	Open int `json:"open"`
}

// LostRequest names a damage record by its key ("instance.<id>",
// "stream.<stream>.<sequence>"); Reason is required to dismiss it.
type LostRequest struct {
	Key    string `json:"key"`
	Reason string `json:"reason,omitempty"`
}

// RecreateResponse names the instance started in place of a lost one.
type RecreateResponse struct {
	ID string `json:"id"`
}
