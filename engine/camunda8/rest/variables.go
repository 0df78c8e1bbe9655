package rest

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"

	"github.com/jetbpm/jetbpm/engine"
	"github.com/jetbpm/jetbpm/engine/camunda8"
)

// maxValue bounds a variable's value in a search result, as Camunda
// truncates it; GET /variables/{key} answers it whole.
const maxValue = 8192

// variable is a variable as the API shows it: its value as JSON text.
// Its scope is its instance: jetbpm shows process-level variables.
type variable struct {
	Name                   string       `json:"name"`
	Value                  string       `json:"value"`
	IsTruncated            bool         `json:"isTruncated"`
	TenantID               string       `json:"tenantId"`
	VariableKey            camunda8.Key `json:"variableKey,string"`
	ScopeKey               camunda8.Key `json:"scopeKey,string"`
	ProcessInstanceKey     camunda8.Key `json:"processInstanceKey,string"`
	RootProcessInstanceKey *string      `json:"rootProcessInstanceKey"`
}

func (h *Handler) showVariable(ctx context.Context, instanceID, name string, value any, truncate bool) (variable, error) {
	ids := h.svc.IDs()
	ik, err := ids.InstanceKey(ctx, instanceID)
	if err != nil {
		return variable{}, err
	}
	vk, err := ids.VariableKey(ctx, instanceID, name)
	if err != nil {
		return variable{}, err
	}
	doc, err := json.Marshal(value)
	if err != nil {
		return variable{}, err
	}
	v := variable{Name: name, Value: string(doc), TenantID: tenant, VariableKey: vk, ScopeKey: ik, ProcessInstanceKey: ik}
	if truncate && len(doc) > maxValue {
		v.Value, v.IsTruncated = string(doc[:maxValue]), true
	}
	return v, nil
}

// variableFilter is what a variable search filters by.
type variableFilter struct {
	ProcessInstanceKey key    `json:"processInstanceKey"`
	ScopeKey           key    `json:"scopeKey"`
	Name               string `json:"name"`
	VariableKey        key    `json:"variableKey"`
	TenantID           string `json:"tenantId"`
}

// searchVariables lists the process-level variables of instances, newest
// instance first, by name within one.
func (h *Handler) searchVariables(w http.ResponseWriter, r *http.Request) {
	var f variableFilter
	p, ok := h.decodeQuery(w, r, &f, "newest instance first, by name within one")
	if !ok || !checkTenant(w, r, f.TenantID) {
		return
	}
	ctx := r.Context()
	empty := searchResult[variable]{Items: []variable{}}
	only := map[string]bool{} // instance ids, when the filter names some
	for _, k := range []key{f.ProcessInstanceKey, f.ScopeKey} {
		if k == 0 {
			continue
		}
		id, err := h.svc.Instance(ctx, int64(k))
		if err != nil || len(only) > 0 && !only[id] {
			reply(w, http.StatusOK, empty)
			return
		}
		only[id] = true
	}
	name := f.Name
	if f.VariableKey != 0 {
		pk, err := camunda8.ParseKey(int64(f.VariableKey), h.svc.Engine().Partitions())
		var id, n string
		if err == nil {
			id, n, err = h.svc.IDs().Variable(ctx, pk)
		}
		if err != nil || len(only) > 0 && !only[id] || name != "" && name != n {
			reply(w, http.StatusOK, empty)
			return
		}
		only, name = map[string]bool{id: true}, n
	}
	var views []*engine.InstanceView
	if len(only) > 0 {
		for id := range only {
			v, err := h.svc.Engine().Instance(ctx, id)
			if err != nil && !errors.Is(err, engine.ErrNotFound) {
				fail(w, r, err)
				return
			}
			if v != nil {
				views = append(views, v)
			}
		}
	} else {
		var err error
		if views, err = h.svc.Engine().Instances(ctx, engine.Filter{}); err != nil {
			fail(w, r, err)
			return
		}
	}
	type match struct {
		inst, name string
		value      any
	}
	var matched []match
	for _, v := range views {
		names := make([]string, 0, len(v.Variables))
		for n := range v.Variables {
			if name == "" || n == name {
				names = append(names, n)
			}
		}
		slices.Sort(names)
		for _, n := range names {
			matched = append(matched, match{v.ID, n, v.Variables[n]})
		}
	}
	lo, hi := p.window(len(matched))
	out := searchResult[variable]{Items: make([]variable, 0, hi-lo), Page: pageInfo{TotalItems: len(matched)}}
	for _, m := range matched[lo:hi] {
		v, err := h.showVariable(ctx, m.inst, m.name, m.value, true)
		if err != nil {
			fail(w, r, err)
			return
		}
		out.Items = append(out.Items, v)
	}
	reply(w, http.StatusOK, out)
}

// getVariable answers one variable, its value whole.
func (h *Handler) getVariable(w http.ResponseWriter, r *http.Request) {
	k, ok := pathKey(w, r)
	if !ok {
		return
	}
	notFound := camunda8.Reject(engine.ErrNotFound, "expected to find variable with key '%d', but none found", k)
	pk, err := camunda8.ParseKey(k, h.svc.Engine().Partitions())
	var id, name string
	if err == nil {
		id, name, err = h.svc.IDs().Variable(r.Context(), pk)
	}
	var v *engine.InstanceView
	if err == nil {
		v, err = h.svc.Engine().Instance(r.Context(), id)
	}
	if errors.Is(err, camunda8.ErrBadKey) || errors.Is(err, engine.ErrNotFound) {
		err = notFound
	}
	if err != nil {
		fail(w, r, err)
		return
	}
	value, ok := v.Variables[name]
	if !ok {
		fail(w, r, notFound)
		return
	}
	out, err := h.showVariable(r.Context(), id, name, value, false)
	if err != nil {
		fail(w, r, err)
		return
	}
	reply(w, http.StatusOK, out)
}
