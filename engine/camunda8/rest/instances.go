package rest

import (
	"errors"
	"net/http"

	"github.com/jetbpm/jetbpm/engine"
	"github.com/jetbpm/jetbpm/engine/camunda8"
	"github.com/jetbpm/jetbpm/engine/instance"
	"github.com/jetbpm/jetbpm/incidents"
)

// instanceFilter is what a process instance search filters by.
type instanceFilter struct {
	ProcessDefinitionID      string `json:"processDefinitionId"`
	ProcessDefinitionKey     key    `json:"processDefinitionKey"`
	ProcessDefinitionVersion *int   `json:"processDefinitionVersion"`
	ProcessInstanceKey       key    `json:"processInstanceKey"`
	ParentProcessInstanceKey key    `json:"parentProcessInstanceKey"`
	State                    string `json:"state"`
	HasIncident              *bool  `json:"hasIncident"`
	BusinessID               string `json:"businessId"`
	TenantID                 string `json:"tenantId"`
}

// searchInstances lists instances, newest first.
func (h *Handler) searchInstances(w http.ResponseWriter, r *http.Request) {
	var f instanceFilter
	p, ok := h.decodeQuery(w, r, &f, "newest first")
	if !ok || !checkTenant(w, r, f.TenantID) {
		return
	}
	ctx := r.Context()
	ef := engine.Filter{ProcessID: f.ProcessDefinitionID}
	switch f.State {
	case "":
	case "ACTIVE":
		ef.Status = instance.Active
	case "COMPLETED":
		ef.Status = instance.Completed
	case "TERMINATED":
	default:
		invalid(w, r, "process instance state %q: want ACTIVE, COMPLETED or TERMINATED", f.State)
		return
	}
	version := f.ProcessDefinitionVersion
	if f.ProcessDefinitionKey != 0 {
		id, v, err := h.svc.Definition(ctx, int64(f.ProcessDefinitionKey))
		if errors.Is(err, engine.ErrNotFound) || err == nil && ef.ProcessID != "" && ef.ProcessID != id {
			reply(w, http.StatusOK, searchResult[*processInstance]{Items: []*processInstance{}})
			return
		}
		if err != nil {
			fail(w, r, err)
			return
		}
		ef.ProcessID, version = id, &v
	}
	var views []*engine.InstanceView
	if f.ProcessInstanceKey != 0 {
		id, err := h.svc.Instance(ctx, int64(f.ProcessInstanceKey))
		if err == nil {
			var v *engine.InstanceView
			if v, err = h.svc.Engine().Instance(ctx, id); err == nil {
				views = append(views, v)
			}
		}
		if err != nil && !errors.Is(err, engine.ErrNotFound) {
			fail(w, r, err)
			return
		}
	} else {
		var err error
		if views, err = h.svc.Engine().Instances(ctx, ef); err != nil {
			fail(w, r, err)
			return
		}
	}
	var parent string
	if f.ParentProcessInstanceKey != 0 {
		id, err := h.svc.Instance(ctx, int64(f.ParentProcessInstanceKey))
		if err != nil {
			reply(w, http.StatusOK, searchResult[*processInstance]{Items: []*processInstance{}})
			return
		}
		parent = id
	}
	matched := views[:0]
	for _, v := range views {
		switch {
		case ef.ProcessID != "" && v.ProcessID != ef.ProcessID,
			version != nil && v.Version != *version,
			f.State != "" && state(v.Status) != f.State,
			f.HasIncident != nil && (len(v.Incidents) > 0) != *f.HasIncident,
			f.BusinessID != "" && v.BusinessKey != f.BusinessID,
			parent != "" && v.ParentInstance != parent:
			continue
		}
		matched = append(matched, v)
	}
	lo, hi := p.window(len(matched))
	out := searchResult[*processInstance]{Items: make([]*processInstance, 0, hi-lo), Page: pageInfo{TotalItems: len(matched)}}
	for _, v := range matched[lo:hi] {
		pi, err := h.showInstance(ctx, v)
		if err != nil {
			fail(w, r, err)
			return
		}
		out.Items = append(out.Items, pi)
	}
	reply(w, http.StatusOK, out)
}

// resolveInstanceIncidents resolves every open incident of an instance,
// as ResolveIncident does each, and answers as Camunda's batch operation
// does — here done by the time it answers.
func (h *Handler) resolveInstanceIncidents(w http.ResponseWriter, r *http.Request) {
	k, ok := pathKey(w, r)
	if !ok {
		return
	}
	ctx := r.Context()
	id, err := h.svc.Instance(ctx, k)
	if err != nil {
		fail(w, r, err)
		return
	}
	if _, err := h.svc.Engine().Instance(ctx, id); err != nil {
		if errors.Is(err, engine.ErrNotFound) {
			err = camunda8.Reject(engine.ErrNotFound, "expected to find a process instance with key '%d', but none found", k)
		}
		fail(w, r, err)
		return
	}
	recs, err := h.svc.Engine().Incidents(ctx, incidents.Filter{Instance: id, State: "open"})
	if err != nil {
		fail(w, r, err)
		return
	}
	for _, rec := range recs {
		if !camunda8.Open(rec) {
			continue
		}
		nk, err := h.svc.IDs().IncidentKey(ctx, rec.ID, rec.Instance)
		if err == nil {
			err = h.svc.ResolveIncident(ctx, int64(nk))
		}
		if err != nil && !errors.Is(err, engine.ErrNotFound) { // one resolved meanwhile is no failure
			fail(w, r, err)
			return
		}
	}
	bk, err := h.svc.IDs().NewKey(ctx, camunda8.Key(k).Partition())
	if err != nil {
		fail(w, r, err)
		return
	}
	reply(w, http.StatusOK, struct {
		BatchOperationKey  string `json:"batchOperationKey"`
		BatchOperationType string `json:"batchOperationType"`
	}{bk.String(), "RESOLVE_INCIDENT"})
}

// setVariables writes variables to the instance the element instance key
// names: jetbpm's element instances have no keys yet, so the key must be
// the instance's (as SetVariables); local changes nothing.
func (h *Handler) setVariables(w http.ResponseWriter, r *http.Request) {
	k, ok := pathKey(w, r)
	if !ok {
		return
	}
	var body struct {
		Variables          map[string]any `json:"variables"`
		Local              bool           `json:"local"`
		OperationReference *int64         `json:"operationReference"`
	}
	if !h.decode(w, r, &body) {
		return
	}
	if body.Variables == nil {
		invalid(w, r, "expected variables, a JSON object, but none given")
		return
	}
	if _, err := h.svc.SetVariables(r.Context(), k, body.Variables); err != nil {
		fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
