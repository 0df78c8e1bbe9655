package camunda7

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/jetbpm/jetbpm/engine"
	"github.com/jetbpm/jetbpm/engine/api"
	"github.com/jetbpm/jetbpm/engine/instance"
	"github.com/jetbpm/jetbpm/incidents"
)

// The runtime endpoints: messages, user tasks, incidents, the version.

// messageRequest is Camunda 7's CorrelationMessageDto.
type messageRequest struct {
	MessageName              string              `json:"messageName"`
	BusinessKey              string              `json:"businessKey"`
	CorrelationKeys          map[string]Variable `json:"correlationKeys"`
	ProcessInstanceID        string              `json:"processInstanceId"`
	ProcessVariables         map[string]Variable `json:"processVariables"`
	ProcessVariablesLocal    map[string]Variable `json:"processVariablesLocal"`
	All                      bool                `json:"all"`
	ResultEnabled            bool                `json:"resultEnabled"`
	VariablesInResultEnabled bool                `json:"variablesInResultEnabled"`
	TenantID                 *string             `json:"tenantId"`
	WithoutTenantID          bool                `json:"withoutTenantId"`
	LocalCorrelationKeys     map[string]Variable `json:"localCorrelationKeys"`
}

// correlateMessage maps POST /message onto jetbpm messages
// (docs/messages.md): jetbpm correlates on one key, so correlationKeys may
// hold one entry, whose value is the key. Without all, the message must
// reach exactly one subscription now (message.correlate); with all, it is
// published (message.publish, no time to live) and reaches every catch
// waiting for it.
func (h *Handler) correlateMessage(w http.ResponseWriter, r *http.Request) {
	if !h.authorize(w, r, Access{Operation: OpMessage}) {
		return
	}
	var req messageRequest
	if !decodeBody(w, r, &req) {
		return
	}
	bad := func(format string, args ...any) {
		writeError(w, http.StatusBadRequest, "InvalidRequestException", fmt.Sprintf(format, args...))
	}
	if req.MessageName == "" {
		bad("messageName is required")
		return
	}
	if len(req.CorrelationKeys) > 1 || len(req.LocalCorrelationKeys) > 0 {
		bad("jetbpm correlates a message on one key: give at most one correlationKeys entry and no localCorrelationKeys")
		return
	}
	mr := api.MessageRequest{Name: req.MessageName, BusinessKey: req.BusinessKey, Instance: req.ProcessInstanceID}
	for name, v := range req.CorrelationKeys {
		key, err := decodeValue(v)
		if err != nil {
			bad("correlationKeys %q: %v", name, err)
			return
		}
		mr.Key = mustJSON(key)
	}
	vars, err := decodeVariables(req.ProcessVariables)
	if err == nil {
		var local map[string]any
		local, err = decodeVariables(req.ProcessVariablesLocal)
		for k, v := range local {
			vars[k] = v
		}
	}
	if err != nil {
		bad("processVariables: %v", err)
		return
	}
	if len(vars) > 0 {
		mr.Vars = mustJSON(vars)
	}
	op := api.OpMessageCorrelate
	if req.All {
		op = api.OpMessagePublish
	}
	res, err := h.do(r.Context(), op, mr)
	if errors.Is(err, engine.ErrNoSubscription) {
		writeError(w, http.StatusBadRequest, "RestException", fmt.Sprintf("Cannot correlate message '%s': %v", req.MessageName, err))
		return
	}
	if err != nil {
		writeEngineError(w, err)
		return
	}
	if !req.ResultEnabled {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	results := []any{}
	if c, ok := res.(api.MessageCorrelateResponse); ok && c.Instance != "" {
		entry := map[string]any{"resultType": "Execution", "execution": map[string]any{"id": c.Instance, "processInstanceId": c.Instance, "ended": false, "tenantId": nil}, "processInstance": nil}
		if v, err := h.eng.Instance(r.Context(), c.Instance); err == nil {
			pi := instanceOf(v)
			entry["processInstance"] = pi
			if req.VariablesInResultEnabled {
				entry["variables"] = encodeVariables(v.Variables, nil)
			}
		}
		results = append(results, entry)
	}
	writeJSON(w, http.StatusOK, results)
}

// task is Camunda 7's TaskDto.
type task struct {
	ID                  string  `json:"id"`
	Name                *string `json:"name"`
	Assignee            *string `json:"assignee"`
	Owner               *string `json:"owner"`
	Created             *string `json:"created"`
	Due                 *string `json:"due"`
	FollowUp            *string `json:"followUp"`
	DelegationState     *string `json:"delegationState"`
	Description         *string `json:"description"`
	ExecutionID         string  `json:"executionId"`
	ParentTaskID        *string `json:"parentTaskId"`
	Priority            int     `json:"priority"`
	ProcessDefinitionID string  `json:"processDefinitionId"`
	ProcessInstanceID   string  `json:"processInstanceId"`
	TaskDefinitionKey   string  `json:"taskDefinitionKey"`
	CaseExecutionID     *string `json:"caseExecutionId"`
	CaseInstanceID      *string `json:"caseInstanceId"`
	CaseDefinitionID    *string `json:"caseDefinitionId"`
	Suspended           bool    `json:"suspended"`
	FormKey             *string `json:"formKey"`
	TenantID            *string `json:"tenantId"`
}

func taskOf(t *instance.Task) task {
	return task{ID: t.ID, Name: nullIfEmpty(t.Name), Assignee: nullIfEmpty(t.Assignee), Created: formatDate(t.CreatedAt),
		Due: formatDate(t.DueDate), FollowUp: formatDate(t.FollowUpDate), ExecutionID: t.Instance + ":" + t.Node, Priority: t.Priority,
		ProcessDefinitionID: definitionID(t.ProcessID, t.Version), ProcessInstanceID: t.Instance, TaskDefinitionKey: t.Node,
		FormKey: nullIfEmpty(t.FormKey)}
}

// listTasks answers GET /task with the filters assignee, candidateUser,
// candidateGroup, includeAssignedTasks, processInstanceId,
// processDefinitionKey, firstResult and maxResults.
func (h *Handler) listTasks(w http.ResponseWriter, r *http.Request) {
	if !h.authorize(w, r, Access{Operation: OpTaskRead}) {
		return
	}
	q := r.URL.Query()
	first, err1 := atoiDefault(q.Get("firstResult"), 0)
	limit, err2 := atoiDefault(q.Get("maxResults"), 0)
	if err := errors.Join(err1, err2); err != nil || first < 0 || limit < 0 {
		writeError(w, http.StatusBadRequest, "InvalidRequestException", "firstResult and maxResults must be non-negative integers")
		return
	}
	req := api.TaskListRequest{Assignee: q.Get("assignee"), CandidateUser: q.Get("candidateUser"), CandidateGroup: q.Get("candidateGroup"),
		IncludeAssigned: q.Get("includeAssignedTasks") == "true", Instance: q.Get("processInstanceId"), ProcessID: q.Get("processDefinitionKey"),
		Offset: first, Limit: limit}
	res, err := h.do(r.Context(), api.OpTaskList, req)
	if err != nil {
		writeEngineError(w, err)
		return
	}
	out := []task{}
	for _, t := range res.(api.TaskListResponse).Tasks {
		out = append(out, taskOf(t))
	}
	writeJSON(w, http.StatusOK, out)
}

// taskOp serves claim ({userId}), unclaim and complete ({variables}).
func (h *Handler) taskOp(op string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !h.authorize(w, r, Access{Operation: OpTaskWork}) {
			return
		}
		var body struct {
			UserID                string              `json:"userId"`
			Variables             map[string]Variable `json:"variables"`
			WithVariablesInReturn bool                `json:"withVariablesInReturn"`
		}
		if !decodeBody(w, r, &body) {
			return
		}
		req := api.TaskRequest{ID: r.PathValue("id"), User: body.UserID}
		if op == api.OpTaskClaim && body.UserID == "" {
			writeError(w, http.StatusBadRequest, "InvalidRequestException", "userId is required")
			return
		}
		if op == api.OpTaskComplete {
			vars, err := decodeVariables(body.Variables)
			if err != nil {
				writeError(w, http.StatusBadRequest, "InvalidRequestException", err.Error())
				return
			}
			req.Vars = mustJSON(vars)
		}
		if _, err := h.do(r.Context(), op, req); err != nil {
			writeTaskError(w, req.ID, err)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}
}

// incident is Camunda 7's IncidentDto.
type incident struct {
	ID                  string  `json:"id"`
	ProcessDefinitionID string  `json:"processDefinitionId"`
	ProcessInstanceID   string  `json:"processInstanceId"`
	ExecutionID         string  `json:"executionId"`
	IncidentTimestamp   *string `json:"incidentTimestamp"`
	IncidentType        string  `json:"incidentType"`
	ActivityID          string  `json:"activityId"`
	FailedActivityID    string  `json:"failedActivityId"`
	CauseIncidentID     string  `json:"causeIncidentId"`
	RootCauseIncidentID string  `json:"rootCauseIncidentId"`
	Configuration       *string `json:"configuration"`
	TenantID            *string `json:"tenantId"`
	IncidentMessage     string  `json:"incidentMessage"`
	JobDefinitionID     *string `json:"jobDefinitionId"`
	Annotation          *string `json:"annotation"`
}

// incidentTypes maps jetbpm's cause classes onto Camunda's incident types.
func incidentType(causeClass string) string {
	if causeClass == incidents.CauseRetriesExhausted {
		return "failedExternalTask"
	}
	return "failedJob"
}

// listIncidents answers GET /incident with the open incidents; filters
// processInstanceId, processDefinitionKey, activityId, incidentType.
func (h *Handler) listIncidents(w http.ResponseWriter, r *http.Request) {
	if !h.authorize(w, r, Access{Operation: OpRead}) {
		return
	}
	q := r.URL.Query()
	res, err := h.do(r.Context(), api.OpIncidentList, api.IncidentListRequest{Instance: q.Get("processInstanceId"), Process: q.Get("processDefinitionKey"),
		Node: q.Get("activityId"), State: "open"})
	if err != nil {
		writeEngineError(w, err)
		return
	}
	out := []incident{}
	for _, rec := range res.(api.IncidentListResponse).Incidents {
		typ := incidentType(rec.CauseClass)
		if v := q.Get("incidentType"); v != "" && v != typ {
			continue
		}
		out = append(out, incident{ID: rec.ID, ProcessDefinitionID: definitionID(rec.ProcessID, rec.Version), ProcessInstanceID: rec.Instance,
			ExecutionID: rec.Instance + ":" + rec.Node, IncidentTimestamp: formatDate(rec.FirstFailure), IncidentType: typ,
			ActivityID: rec.Node, FailedActivityID: rec.Node, CauseIncidentID: rec.ID, RootCauseIncidentID: rec.ID, IncidentMessage: rec.Cause()})
	}
	writeJSON(w, http.StatusOK, out)
}

// EngineVersion is the Camunda 7 version GET /version reports: the REST
// API level the facade follows.
const EngineVersion = "7.22.0"

func (h *Handler) version(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"version": EngineVersion})
}
