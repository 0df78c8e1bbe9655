package api

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/jetbpm/jetbpm/engine"
	"github.com/jetbpm/jetbpm/engine/instance"
)

// User task operations (docs/usertasks.md).
const (
	OpTaskList     = "task.list"
	OpTaskGet      = "task.get"
	OpTaskClaim    = "task.claim"
	OpTaskUnclaim  = "task.unclaim"
	OpTaskAssign   = "task.assign"
	OpTaskUpdate   = "task.update"
	OpTaskComplete = "task.complete"
	OpTaskError    = "task.error"
	OpTaskEscalate = "task.escalate"
	// OpTaskForm reads the form the task's BPMN file holds for it
	// (docs/forms.md).
	OpTaskForm = "task.form"
)

// Task list limits: a list without a limit returns DefaultTaskLimit
// tasks, and no list more than MaxTaskLimit (page with Offset).
const (
	DefaultTaskLimit = 50
	MaxTaskLimit     = 1000
)

// TaskListRequest filters tasks (engine.TaskFilter); every field is
// optional. State is open (the default), all, created, assigned,
// completed or canceled; DueBefore an RFC 3339 time or a date
// (2026-12-01, midnight UTC).
type TaskListRequest struct {
	Assignee        string `json:"assignee,omitempty"`
	CandidateUser   string `json:"candidateUser,omitempty"`
	CandidateGroup  string `json:"candidateGroup,omitempty"`
	IncludeAssigned bool   `json:"includeAssigned,omitempty"`
	ProcessID       string `json:"processId,omitempty"`
	Instance        string `json:"instanceId,omitempty"`
	State           string `json:"state,omitempty"`
	DueBefore       string `json:"dueBefore,omitempty"`
	Offset          int    `json:"offset,omitempty"`
	Limit           int    `json:"limit,omitempty"`
}

// Filter turns the request into the engine's filter.
func (r TaskListRequest) Filter() (engine.TaskFilter, error) {
	f := engine.TaskFilter{
		Assignee: r.Assignee, CandidateUser: r.CandidateUser, CandidateGroup: r.CandidateGroup, IncludeAssigned: r.IncludeAssigned,
		ProcessID: r.ProcessID, Instance: r.Instance, State: r.State, Offset: r.Offset, Limit: r.Limit,
	}
	switch {
	case r.Limit == 0:
		f.Limit = DefaultTaskLimit
	case r.Limit < 0 || r.Limit > MaxTaskLimit:
		return f, fmt.Errorf("%w: limit %d: want 1 to %d (absent: %d)", engine.ErrInvalid, r.Limit, MaxTaskLimit, DefaultTaskLimit)
	}
	if r.DueBefore != "" {
		t, err := ParseTaskTime(r.DueBefore)
		if err != nil {
			return f, fmt.Errorf("%w: dueBefore: %v", engine.ErrInvalid, err)
		}
		f.DueBefore = t
	}
	return f, nil
}

// ParseTaskTime reads a time of the task API: RFC 3339
// (2026-12-01T17:00:00+01:00) or a date (2026-12-01, midnight UTC).
func ParseTaskTime(s string) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t.UTC(), nil
	}
	if t, err := time.Parse(time.DateOnly, s); err == nil {
		return t, nil
	}
	return time.Time{}, fmt.Errorf("%q is not an RFC 3339 time such as 2026-12-01T17:00:00Z, or a date such as 2026-12-01", s)
}

// TaskListResponse holds a page of tasks, in list order.
type TaskListResponse struct {
	Tasks []*instance.Task `json:"tasks"`
}

// TaskFormResponse is a task's form: a Camunda Forms (form-js) JSON
// schema, as a Camunda 8 Tasklist renders it.
type TaskFormResponse struct {
	TaskID string          `json:"taskId"`
	Schema json.RawMessage `json:"schema"`
}

// TaskRequest names a task, and carries what its operation takes: User
// (claim, assign, and who acts for the others), Vars (complete, error,
// escalate), Code (error, escalate) and Message (error), DueDate, FollowUpDate and Priority (update:
// absent or null leaves a field, "" clears a date).
type TaskRequest struct {
	ID           string          `json:"id"`
	User         string          `json:"user,omitempty"`
	Vars         json.RawMessage `json:"vars,omitempty"`
	Code         string          `json:"code,omitempty"`
	Message      string          `json:"message,omitempty"`
	DueDate      *string         `json:"dueDate,omitempty"`
	FollowUpDate *string         `json:"followUpDate,omitempty"`
	Priority     *int            `json:"priority,omitempty"`
}

// check refuses the fields op does not take: a client that sends them
// meant something else.
func (r TaskRequest) check(op string) error {
	var extra []string
	if len(r.Vars) > 0 && op != OpTaskComplete && op != OpTaskError && op != OpTaskEscalate {
		extra = append(extra, "vars")
	}
	switch {
	case (r.Code != "" || r.Message != "") && op != OpTaskError && op != OpTaskEscalate:
		extra = append(extra, "code, message")
	case r.Message != "" && op == OpTaskEscalate:
		extra = append(extra, "message")
	}
	if (r.DueDate != nil || r.FollowUpDate != nil || r.Priority != nil) && op != OpTaskUpdate {
		extra = append(extra, "dueDate, followUpDate, priority")
	}
	if r.User != "" && (op == OpTaskGet || op == OpTaskForm) {
		extra = append(extra, "user")
	}
	if len(extra) > 0 {
		return fmt.Errorf("%w: %s takes no %s", engine.ErrInvalid, op, strings.Join(extra, "; "))
	}
	return nil
}

// update turns the request into the engine's update.
func (r TaskRequest) update() (engine.TaskUpdate, error) {
	u := engine.TaskUpdate{Priority: r.Priority, User: r.User}
	for _, d := range []struct {
		name string
		in   *string
		out  **time.Time
	}{{"dueDate", r.DueDate, &u.DueDate}, {"followUpDate", r.FollowUpDate, &u.FollowUpDate}} {
		if d.in == nil {
			continue
		}
		var t time.Time // "" clears the date
		if *d.in != "" {
			var err error
			if t, err = ParseTaskTime(*d.in); err != nil {
				return u, fmt.Errorf("%w: %s: %v", engine.ErrInvalid, d.name, err)
			}
		}
		*d.out = &t
	}
	return u, nil
}

// task runs one task operation and answers with the task's record as it
// is afterwards.
func (h *Handler) task(ctx context.Context, op string, req TaskRequest) (*instance.Task, error) {
	if err := req.check(op); err != nil {
		return nil, err
	}
	switch op {
	case OpTaskGet:
		return h.eng.Task(ctx, req.ID)
	case OpTaskClaim:
		return h.eng.ClaimTask(ctx, req.ID, req.User)
	case OpTaskUnclaim:
		return h.eng.UnclaimTask(ctx, req.ID, req.User)
	case OpTaskAssign:
		return h.eng.AssignTask(ctx, req.ID, req.User)
	case OpTaskUpdate:
		u, err := req.update()
		if err != nil {
			return nil, err
		}
		return h.eng.UpdateTask(ctx, req.ID, u)
	}
	vars, err := decodeVars(req.Vars)
	if err != nil {
		return nil, err
	}
	switch op {
	case OpTaskComplete:
		return h.eng.CompleteTask(ctx, req.ID, req.User, vars)
	case OpTaskEscalate:
		return h.eng.EscalateTask(ctx, req.ID, req.User, req.Code, vars)
	}
	return h.eng.TaskError(ctx, req.ID, req.User, req.Code, req.Message, vars)
}

// Tasks lists tasks: a page of at most req.Limit (absent: DefaultTaskLimit).
func (c *Client) Tasks(ctx context.Context, req TaskListRequest) ([]*instance.Task, error) {
	var out TaskListResponse
	err := c.call(ctx, OpTaskList, req, &out)
	return out.Tasks, err
}

// Task reads one task's record.
func (c *Client) Task(ctx context.Context, id string) (*instance.Task, error) {
	return c.taskCall(ctx, OpTaskGet, TaskRequest{ID: id})
}

// TaskForm reads the form task id's BPMN file holds for it; a task whose
// form is not in the file (or that has none) is engine.ErrNotFound (code
// not_found), the message saying which.
func (c *Client) TaskForm(ctx context.Context, id string) (TaskFormResponse, error) {
	var out TaskFormResponse
	err := c.call(ctx, OpTaskForm, TaskRequest{ID: id}, &out)
	return out, err
}

// ClaimTask gives the task to user; another user's claim is refused with
// engine.ErrConflict (code conflict). It returns the record afterwards, as
// do the other task operations.
func (c *Client) ClaimTask(ctx context.Context, id, user string) (*instance.Task, error) {
	return c.taskCall(ctx, OpTaskClaim, TaskRequest{ID: id, User: user})
}

// UnclaimTask leaves the task to nobody; user is who does it ("" allowed).
func (c *Client) UnclaimTask(ctx context.Context, id, user string) (*instance.Task, error) {
	return c.taskCall(ctx, OpTaskUnclaim, TaskRequest{ID: id, User: user})
}

// AssignTask gives the task to user whoever holds it; "" unassigns.
func (c *Client) AssignTask(ctx context.Context, id, user string) (*instance.Task, error) {
	return c.taskCall(ctx, OpTaskAssign, TaskRequest{ID: id, User: user})
}

// UpdateTask sets what u sets of the due date, follow-up date and
// priority (a zero time clears a date).
func (c *Client) UpdateTask(ctx context.Context, id string, u engine.TaskUpdate) (*instance.Task, error) {
	req := TaskRequest{ID: id, User: u.User, Priority: u.Priority}
	for _, d := range []struct {
		in  *time.Time
		out **string
	}{{u.DueDate, &req.DueDate}, {u.FollowUpDate, &req.FollowUpDate}} {
		if d.in != nil {
			s := ""
			if !d.in.IsZero() {
				s = d.in.UTC().Format(time.RFC3339Nano)
			}
			*d.out = &s
		}
	}
	return c.taskCall(ctx, OpTaskUpdate, req)
}

// CompleteTask completes the task with vars (a JSON object; nil for none)
// as its results; user is recorded as completedBy.
func (c *Client) CompleteTask(ctx context.Context, id, user string, vars json.RawMessage) (*instance.Task, error) {
	return c.taskCall(ctx, OpTaskComplete, TaskRequest{ID: id, User: user, Vars: vars})
}

// TaskError ends the task with BPMN error code (message optional), after
// setting vars (a JSON object; nil for none).
func (c *Client) TaskError(ctx context.Context, id, user, code, message string, vars json.RawMessage) (*instance.Task, error) {
	return c.taskCall(ctx, OpTaskError, TaskRequest{ID: id, User: user, Code: code, Message: message, Vars: vars})
}

// EscalateTask raises escalation code from the task, after setting vars
// (a JSON object; nil for none). Refused with engine.ErrInvalid when
// nothing catches it.
func (c *Client) EscalateTask(ctx context.Context, id, user, code string, vars json.RawMessage) (*instance.Task, error) {
	return c.taskCall(ctx, OpTaskEscalate, TaskRequest{ID: id, User: user, Code: code, Vars: vars})
}

func (c *Client) taskCall(ctx context.Context, op string, req TaskRequest) (*instance.Task, error) {
	var out instance.Task
	if err := c.call(ctx, op, req, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
