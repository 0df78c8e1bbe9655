package rest

import (
	"context"
	"errors"
	"net/http"

	"github.com/jetbpm/jetbpm/engine"
	"github.com/jetbpm/jetbpm/engine/camunda8"
	"github.com/jetbpm/jetbpm/incidents"
)

// incident is an incident as the API shows it.
type incident struct {
	ProcessDefinitionID    string       `json:"processDefinitionId"`
	ErrorType              string       `json:"errorType"`
	ErrorMessage           string       `json:"errorMessage"`
	ElementID              string       `json:"elementId"`
	CreationTime           string       `json:"creationTime"`
	State                  string       `json:"state"`
	TenantID               string       `json:"tenantId"`
	IncidentKey            camunda8.Key `json:"incidentKey,string"`
	ProcessDefinitionKey   camunda8.Key `json:"processDefinitionKey,string"`
	ProcessInstanceKey     camunda8.Key `json:"processInstanceKey,string"`
	RootProcessInstanceKey *string      `json:"rootProcessInstanceKey"`
	ElementInstanceKey     camunda8.Key `json:"elementInstanceKey,string"`
	JobKey                 *string      `json:"jobKey"`
}

// errorTypes maps jetbpm's cause classes onto Camunda's error types.
var errorTypes = map[string]string{
	incidents.CauseOperation:        "JOB_NO_RETRIES",
	incidents.CauseRetriesExhausted: "JOB_NO_RETRIES",
	incidents.CauseExpression:       "EXTRACT_VALUE_ERROR",
	incidents.CauseDataFlow:         "IO_MAPPING_ERROR",
	incidents.CauseBpmnError:        "UNHANDLED_ERROR_EVENT",
	incidents.CauseChildFailed:      "CALLED_ELEMENT_ERROR",
}

// showIncident shows a record, giving it (and its instance) a key. An
// incident retrying is RESOLVED, as ResolveIncident made it to the
// client (camunda8.Open).
func (h *Handler) showIncident(ctx context.Context, rec *incidents.Record) (incident, error) {
	ids := h.svc.IDs()
	ik, err := ids.InstanceKey(ctx, rec.Instance)
	if err != nil {
		return incident{}, err
	}
	dk, err := ids.DefinitionKey(ctx, rec.ProcessID, rec.Version)
	if err != nil {
		return incident{}, err
	}
	nk, err := ids.IncidentKey(ctx, rec.ID, rec.Instance)
	if err != nil {
		return incident{}, err
	}
	typ, ok := errorTypes[rec.CauseClass]
	if !ok {
		typ = "UNKNOWN"
	}
	st := "RESOLVED"
	if camunda8.Open(rec) {
		st = "ACTIVE"
	}
	return incident{ProcessDefinitionID: rec.ProcessID, ErrorType: typ, ErrorMessage: rec.Cause(), ElementID: rec.Node,
		CreationTime: timestamp(rec.FirstFailure), State: st, TenantID: tenant, IncidentKey: nk, ProcessDefinitionKey: dk,
		ProcessInstanceKey: ik, ElementInstanceKey: ik}, nil
}

// incidentFilter is what an incident search filters by.
type incidentFilter struct {
	ProcessInstanceKey  key    `json:"processInstanceKey"`
	ProcessDefinitionID string `json:"processDefinitionId"`
	ElementID           string `json:"elementId"`
	State               string `json:"state"`
	TenantID            string `json:"tenantId"`
}

func (h *Handler) searchIncidents(w http.ResponseWriter, r *http.Request) {
	var q incidentFilter
	p, ok := h.decodeQuery(w, r, &q, "oldest first")
	if !ok || !checkTenant(w, r, q.TenantID) {
		return
	}
	switch q.State {
	case "", "ACTIVE", "RESOLVED":
	default:
		invalid(w, r, "incident state %q: jetbpm's incidents are ACTIVE or RESOLVED", q.State)
		return
	}
	f := incidents.Filter{ProcessID: q.ProcessDefinitionID, Node: q.ElementID}
	if q.ProcessInstanceKey != 0 {
		id, err := h.svc.Instance(r.Context(), int64(q.ProcessInstanceKey))
		if errors.Is(err, engine.ErrNotFound) {
			reply(w, http.StatusOK, searchResult[incident]{Items: []incident{}})
			return
		}
		if err != nil {
			fail(w, r, err)
			return
		}
		f.Instance = id
	}
	recs, err := h.svc.Engine().Incidents(r.Context(), f)
	if err != nil {
		fail(w, r, err)
		return
	}
	matched := recs[:0]
	for _, rec := range recs {
		if q.State == "" || (q.State == "ACTIVE") == camunda8.Open(rec) {
			matched = append(matched, rec)
		}
	}
	lo, hi := p.window(len(matched))
	out := searchResult[incident]{Items: make([]incident, 0, hi-lo), Page: pageInfo{TotalItems: len(matched)}}
	for _, rec := range matched[lo:hi] {
		inc, err := h.showIncident(r.Context(), rec)
		if err != nil {
			fail(w, r, err)
			return
		}
		out.Items = append(out.Items, inc)
	}
	reply(w, http.StatusOK, out)
}

func (h *Handler) getIncident(w http.ResponseWriter, r *http.Request) {
	k, ok := pathKey(w, r)
	if !ok {
		return
	}
	id, err := h.svc.Incident(r.Context(), k)
	if err != nil {
		fail(w, r, err)
		return
	}
	v, err := h.svc.Engine().Incident(r.Context(), id)
	if errors.Is(err, engine.ErrNotFound) {
		err = camunda8.Reject(engine.ErrNotFound, "expected to find incident with key '%d', but none found", k)
	}
	if err != nil {
		fail(w, r, err)
		return
	}
	inc, err := h.showIncident(r.Context(), v.Record)
	if err != nil {
		fail(w, r, err)
		return
	}
	reply(w, http.StatusOK, inc)
}
