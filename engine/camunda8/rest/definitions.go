package rest

import (
	"context"
	"errors"
	"net/http"

	"github.com/jetbpm/jetbpm/engine"
	"github.com/jetbpm/jetbpm/engine/camunda8"
)

// processDefinition is a process version as the API shows it.
type processDefinition struct {
	Name                 *string      `json:"name"`
	ResourceName         string       `json:"resourceName"`
	Version              int          `json:"version"`
	VersionTag           *string      `json:"versionTag"`
	ProcessDefinitionID  string       `json:"processDefinitionId"`
	TenantID             string       `json:"tenantId"`
	ProcessDefinitionKey camunda8.Key `json:"processDefinitionKey,string"`
	HasStartForm         bool         `json:"hasStartForm"`
	State                string       `json:"state"`
}

// showDefinition shows version version of processID, giving it a key.
func (h *Handler) showDefinition(ctx context.Context, processID string, version int) (processDefinition, error) {
	info, err := h.svc.Engine().ProcessInfo(ctx, processID, version)
	if err != nil {
		return processDefinition{}, err
	}
	k, err := h.svc.IDs().DefinitionKey(ctx, info.ID, info.Version)
	if err != nil {
		return processDefinition{}, err
	}
	d := processDefinition{ResourceName: info.Resource, Version: info.Version, ProcessDefinitionID: info.ID, TenantID: tenant,
		ProcessDefinitionKey: k, State: "ACTIVE"}
	if info.Name != "" {
		d.Name = &info.Name
	}
	return d, nil
}

// definitionFilter is what a process definition search filters by.
type definitionFilter struct {
	ProcessDefinitionID  string `json:"processDefinitionId"`
	ProcessDefinitionKey key    `json:"processDefinitionKey"`
	Name                 string `json:"name"`
	Version              *int   `json:"version"`
	IsLatestVersion      bool   `json:"isLatestVersion"`
	TenantID             string `json:"tenantId"`
}

// searchDefinitions lists process versions, by process id, oldest
// version first.
func (h *Handler) searchDefinitions(w http.ResponseWriter, r *http.Request) {
	var f definitionFilter
	p, ok := h.decodeQuery(w, r, &f, "by process id, oldest version first")
	if !ok || !checkTenant(w, r, f.TenantID) {
		return
	}
	type version struct {
		id string
		v  int
	}
	var matched []version
	if f.ProcessDefinitionKey != 0 {
		id, v, err := h.svc.Definition(r.Context(), int64(f.ProcessDefinitionKey))
		if err == nil {
			matched = append(matched, version{id, v})
		}
	} else {
		procs, err := h.svc.Engine().Processes(r.Context())
		if err != nil {
			fail(w, r, err)
			return
		}
		for _, info := range procs {
			if f.ProcessDefinitionID != "" && info.ID != f.ProcessDefinitionID || f.Name != "" && info.Name != f.Name {
				continue
			}
			for _, v := range info.Versions {
				if (f.IsLatestVersion && v != info.Version) || (f.Version != nil && v != *f.Version) {
					continue
				}
				matched = append(matched, version{info.ID, v})
			}
		}
	}
	lo, hi := p.window(len(matched))
	out := searchResult[processDefinition]{Items: make([]processDefinition, 0, hi-lo), Page: pageInfo{TotalItems: len(matched)}}
	for _, m := range matched[lo:hi] {
		d, err := h.showDefinition(r.Context(), m.id, m.v)
		if errors.Is(err, engine.ErrNotFound) {
			continue // deleted meanwhile
		}
		if err != nil {
			fail(w, r, err)
			return
		}
		out.Items = append(out.Items, d)
	}
	reply(w, http.StatusOK, out)
}

// pathDefinition reads the path's process definition key, answering an
// unknown one itself.
func (h *Handler) pathDefinition(w http.ResponseWriter, r *http.Request) (string, int, bool) {
	k, ok := pathKey(w, r)
	if !ok {
		return "", 0, false
	}
	id, v, err := h.svc.Definition(r.Context(), k)
	if err != nil {
		fail(w, r, err)
		return "", 0, false
	}
	return id, v, true
}

func (h *Handler) getDefinition(w http.ResponseWriter, r *http.Request) {
	id, v, ok := h.pathDefinition(w, r)
	if !ok {
		return
	}
	d, err := h.showDefinition(r.Context(), id, v)
	if err != nil {
		fail(w, r, err)
		return
	}
	reply(w, http.StatusOK, d)
}

// definitionXML answers the BPMN document the version was deployed from.
func (h *Handler) definitionXML(w http.ResponseWriter, r *http.Request) {
	id, v, ok := h.pathDefinition(w, r)
	if !ok {
		return
	}
	doc, err := h.svc.Engine().ProcessSource(r.Context(), id, v)
	if err != nil {
		fail(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "text/xml")
	_, _ = w.Write(doc)
}
