package rest

import (
	"context"
	"net/http"
	"time"

	"github.com/jetbpm/jetbpm/engine"
	"github.com/jetbpm/jetbpm/engine/camunda8"
	"github.com/jetbpm/jetbpm/engine/instance"
)

// userTask is a user task as the API shows it.
type userTask struct {
	Name                     *string           `json:"name"`
	State                    string            `json:"state"`
	Assignee                 *string           `json:"assignee"`
	ElementID                string            `json:"elementId"`
	CandidateGroups          []string          `json:"candidateGroups"`
	CandidateUsers           []string          `json:"candidateUsers"`
	ProcessDefinitionID      string            `json:"processDefinitionId"`
	CreationDate             string            `json:"creationDate"`
	CompletionDate           *string           `json:"completionDate"`
	FollowUpDate             *string           `json:"followUpDate"`
	DueDate                  *string           `json:"dueDate"`
	TenantID                 string            `json:"tenantId"`
	ExternalFormReference    *string           `json:"externalFormReference"`
	ProcessDefinitionVersion int               `json:"processDefinitionVersion"`
	CustomHeaders            map[string]string `json:"customHeaders"`
	Priority                 int               `json:"priority"`
	UserTaskKey              camunda8.Key      `json:"userTaskKey,string"`
	ElementInstanceKey       camunda8.Key      `json:"elementInstanceKey,string"`
	ProcessName              *string           `json:"processName"`
	ProcessDefinitionKey     camunda8.Key      `json:"processDefinitionKey,string"`
	ProcessInstanceKey       camunda8.Key      `json:"processInstanceKey,string"`
	RootProcessInstanceKey   *string           `json:"rootProcessInstanceKey"`
	FormKey                  *string           `json:"formKey"`
	Tags                     []string          `json:"tags"`
}

// taskStates maps task states onto Camunda's: an assigned task is
// CREATED, as a Camunda 8 task at rest is.
var taskStates = map[instance.TaskState]string{
	instance.TaskCreated: "CREATED", instance.TaskAssigned: "CREATED",
	instance.TaskCompleted: "COMPLETED", instance.TaskCanceled: "CANCELED",
}

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func optionalTime(t time.Time) *string {
	if t.IsZero() {
		return nil
	}
	s := timestamp(t)
	return &s
}

func orNone(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// showTask shows a task, giving it (and its instance) a key.
func (h *Handler) showTask(ctx context.Context, t *instance.Task) (userTask, error) {
	ids := h.svc.IDs()
	tk, err := ids.TaskKey(ctx, t.ID, t.Instance)
	if err != nil {
		return userTask{}, err
	}
	ik, err := ids.InstanceKey(ctx, t.Instance)
	if err != nil {
		return userTask{}, err
	}
	dk, err := ids.DefinitionKey(ctx, t.ProcessID, t.Version)
	if err != nil {
		return userTask{}, err
	}
	return userTask{Name: optional(t.Name), State: taskStates[t.State], Assignee: optional(t.Assignee), ElementID: t.Node,
		CandidateGroups: orNone(t.CandidateGroups), CandidateUsers: orNone(t.CandidateUsers), ProcessDefinitionID: t.ProcessID,
		CreationDate: timestamp(t.CreatedAt), CompletionDate: optionalTime(t.EndedAt), FollowUpDate: optionalTime(t.FollowUpDate),
		DueDate: optionalTime(t.DueDate), TenantID: tenant, ExternalFormReference: optional(t.ExternalReference),
		ProcessDefinitionVersion: t.Version, CustomHeaders: map[string]string{}, Priority: t.Priority, UserTaskKey: tk,
		ElementInstanceKey: ik, ProcessDefinitionKey: dk, ProcessInstanceKey: ik, Tags: []string{}}, nil
}

// taskFilter is what a user task search filters by.
type taskFilter struct {
	State               string `json:"state"`
	Assignee            string `json:"assignee"`
	CandidateUser       string `json:"candidateUser"`
	CandidateGroup      string `json:"candidateGroup"`
	ProcessInstanceKey  key    `json:"processInstanceKey"`
	ProcessDefinitionID string `json:"processDefinitionId"`
	ElementID           string `json:"elementId"`
	UserTaskKey         key    `json:"userTaskKey"`
	TenantID            string `json:"tenantId"`
}

func (h *Handler) searchTasks(w http.ResponseWriter, r *http.Request) {
	var f taskFilter
	p, ok := h.decodeQuery(w, r, &f, "oldest first")
	if !ok || !checkTenant(w, r, f.TenantID) {
		return
	}
	ctx := r.Context()
	ef := engine.TaskFilter{Assignee: f.Assignee, CandidateUser: f.CandidateUser, CandidateGroup: f.CandidateGroup,
		IncludeAssigned: true, ProcessID: f.ProcessDefinitionID, State: engine.TasksAll}
	switch f.State {
	case "", "CREATED", "COMPLETED", "CANCELED":
	default:
		invalid(w, r, "user task state %q: jetbpm's user tasks are CREATED, COMPLETED or CANCELED", f.State)
		return
	}
	empty := searchResult[userTask]{Items: []userTask{}}
	if f.ProcessInstanceKey != 0 {
		id, err := h.svc.Instance(ctx, int64(f.ProcessInstanceKey))
		if err != nil {
			reply(w, http.StatusOK, empty)
			return
		}
		ef.Instance = id
	}
	var only string
	if f.UserTaskKey != 0 {
		id, err := h.svc.Task(ctx, int64(f.UserTaskKey))
		if err != nil {
			reply(w, http.StatusOK, empty)
			return
		}
		only = id
	}
	tasks, err := h.svc.Engine().Tasks(ctx, ef)
	if err != nil {
		fail(w, r, err)
		return
	}
	matched := tasks[:0]
	for _, t := range tasks {
		if (f.State == "" || taskStates[t.State] == f.State) && (f.ElementID == "" || t.Node == f.ElementID) && (only == "" || t.ID == only) {
			matched = append(matched, t)
		}
	}
	lo, hi := p.window(len(matched))
	out := searchResult[userTask]{Items: make([]userTask, 0, hi-lo), Page: pageInfo{TotalItems: len(matched)}}
	for _, t := range matched[lo:hi] {
		ut, err := h.showTask(ctx, t)
		if err != nil {
			fail(w, r, err)
			return
		}
		out.Items = append(out.Items, ut)
	}
	reply(w, http.StatusOK, out)
}

// task reads the path's user task: its id, or the error answered.
func (h *Handler) task(w http.ResponseWriter, r *http.Request) (string, bool) {
	k, ok := pathKey(w, r)
	if !ok {
		return "", false
	}
	id, err := h.svc.Task(r.Context(), k)
	if err != nil {
		fail(w, r, err)
		return "", false
	}
	return id, true
}

func (h *Handler) getTask(w http.ResponseWriter, r *http.Request) {
	id, ok := h.task(w, r)
	if !ok {
		return
	}
	t, err := h.svc.Engine().Task(r.Context(), id)
	if err != nil {
		fail(w, r, err)
		return
	}
	ut, err := h.showTask(r.Context(), t)
	if err != nil {
		fail(w, r, err)
		return
	}
	reply(w, http.StatusOK, ut)
}

// assignTask gives the task to assignee: whoever holds it (allowOverride,
// the default), or only when nobody else does (409 otherwise).
func (h *Handler) assignTask(w http.ResponseWriter, r *http.Request) {
	id, ok := h.task(w, r)
	if !ok {
		return
	}
	var body struct {
		Assignee      string `json:"assignee"`
		AllowOverride *bool  `json:"allowOverride"`
		Action        string `json:"action"`
	}
	if !h.decode(w, r, &body) {
		return
	}
	if body.Assignee == "" {
		invalid(w, r, "expected an assignee, but none given")
		return
	}
	var err error
	if body.AllowOverride == nil || *body.AllowOverride {
		_, err = h.svc.Engine().AssignTask(r.Context(), id, body.Assignee)
	} else {
		_, err = h.svc.Engine().ClaimTask(r.Context(), id, body.Assignee)
	}
	h.taskDone(w, r, err)
}

// unassignTask leaves the task to nobody.
func (h *Handler) unassignTask(w http.ResponseWriter, r *http.Request) {
	id, ok := h.task(w, r)
	if !ok {
		return
	}
	_, err := h.svc.Engine().UnclaimTask(r.Context(), id, "")
	h.taskDone(w, r, err)
}

// completeTask completes the task with variables as its results.
func (h *Handler) completeTask(w http.ResponseWriter, r *http.Request) {
	id, ok := h.task(w, r)
	if !ok {
		return
	}
	var body struct {
		Variables map[string]any `json:"variables"`
		Action    string         `json:"action"`
	}
	if !h.decode(w, r, &body) {
		return
	}
	_, err := h.svc.Engine().CompleteTask(r.Context(), id, "", body.Variables)
	h.taskDone(w, r, err)
}

// updateTask changes a task's due date, follow-up date and priority; its
// candidates are the model's, and changing them is refused.
func (h *Handler) updateTask(w http.ResponseWriter, r *http.Request) {
	id, ok := h.task(w, r)
	if !ok {
		return
	}
	var body struct {
		Changeset struct {
			DueDate         *string  `json:"dueDate"`
			FollowUpDate    *string  `json:"followUpDate"`
			Priority        *int     `json:"priority"`
			CandidateUsers  []string `json:"candidateUsers"`
			CandidateGroups []string `json:"candidateGroups"`
		} `json:"changeset"`
		Action string `json:"action"`
	}
	if !h.decode(w, r, &body) {
		return
	}
	c := body.Changeset
	if c.CandidateUsers != nil || c.CandidateGroups != nil {
		problem(w, r, http.StatusNotImplemented, "NOT_IMPLEMENTED", "changing a user task's candidates is not supported by jetbpm: they are the model's")
		return
	}
	u := engine.TaskUpdate{Priority: c.Priority}
	for _, d := range []struct {
		name string
		in   *string
		out  **time.Time
	}{{"dueDate", c.DueDate, &u.DueDate}, {"followUpDate", c.FollowUpDate, &u.FollowUpDate}} {
		if d.in == nil {
			continue
		}
		var t time.Time // "" clears the date
		if *d.in != "" {
			var err error
			if t, err = time.Parse(time.RFC3339Nano, *d.in); err != nil {
				invalid(w, r, "changeset.%s %q is not an RFC 3339 date-time", d.name, *d.in)
				return
			}
		}
		*d.out = &t
	}
	_, err := h.svc.Engine().UpdateTask(r.Context(), id, u)
	h.taskDone(w, r, err)
}

// taskDone answers a task command: 204, or its refusal (a finished task
// and a task another user holds are 409).
func (h *Handler) taskDone(w http.ResponseWriter, r *http.Request, err error) {
	if err != nil {
		fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
