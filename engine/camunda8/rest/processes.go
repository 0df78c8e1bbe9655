package rest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"time"

	"github.com/jetbpm/jetbpm/engine"
	"github.com/jetbpm/jetbpm/engine/camunda8"
	"github.com/jetbpm/jetbpm/engine/instance"
)

// The topology: this node as the one broker, leading every partition —
// jetbpm's partitions are not owned by nodes.
type topology struct {
	Brokers               []broker `json:"brokers"`
	ClusterID             *string  `json:"clusterId"`
	ClusterSize           int      `json:"clusterSize"`
	PartitionsCount       int      `json:"partitionsCount"`
	ReplicationFactor     int      `json:"replicationFactor"`
	GatewayVersion        string   `json:"gatewayVersion"`
	LastCompletedChangeID string   `json:"lastCompletedChangeId"`
}

type broker struct {
	NodeID     int         `json:"nodeId"`
	Host       string      `json:"host"`
	Port       int         `json:"port"`
	Partitions []partition `json:"partitions"`
	Version    string      `json:"version"`
}

type partition struct {
	PartitionID int    `json:"partitionId"`
	Role        string `json:"role"`
	Health      string `json:"health"`
}

func (h *Handler) topology(w http.ResponseWriter, r *http.Request) {
	n := h.svc.Engine().Partitions()
	parts := make([]partition, n)
	for i := range parts {
		parts[i] = partition{PartitionID: i + 1, Role: "leader", Health: "healthy"}
	}
	reply(w, http.StatusOK, topology{
		Brokers:     []broker{{Host: h.opts.Host, Port: h.opts.Port, Partitions: parts, Version: h.opts.Version}},
		ClusterSize: 1, PartitionsCount: n, ReplicationFactor: 1, GatewayVersion: h.opts.Version, LastCompletedChangeID: "-1",
	})
}

// status answers 204: the engine this handler serves is up.
func (h *Handler) status(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }

type deploymentResult struct {
	DeploymentKey camunda8.Key `json:"deploymentKey,string"`
	TenantID      string       `json:"tenantId"`
	Deployments   []deployed   `json:"deployments"`
}

// deployed is one deployed resource; only processes exist here, the other
// kinds are always null.
type deployed struct {
	ProcessDefinition    *processMeta `json:"processDefinition"`
	DecisionDefinition   *struct{}    `json:"decisionDefinition"`
	DecisionRequirements *struct{}    `json:"decisionRequirements"`
	Form                 *struct{}    `json:"form"`
	Resource             *struct{}    `json:"resource"`
}

type processMeta struct {
	ProcessDefinitionID      string       `json:"processDefinitionId"`
	ProcessDefinitionVersion int          `json:"processDefinitionVersion"`
	ResourceName             string       `json:"resourceName"`
	TenantID                 string       `json:"tenantId"`
	ProcessDefinitionKey     camunda8.Key `json:"processDefinitionKey,string"`
}

// deploy deploys the multipart form's "resources" files, all or none.
func (h *Handler) deploy(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 4*h.opts.MaxBody)
	if err := r.ParseMultipartForm(h.opts.MaxBody); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			problem(w, r, http.StatusRequestEntityTooLarge, "RESOURCE_EXHAUSTED", fmt.Sprintf("the deployment is over %d bytes", tooBig.Limit))
			return
		}
		invalid(w, r, "expected a multipart/form-data body with the files in the field \"resources\": %v", err)
		return
	}
	defer func() { _ = r.MultipartForm.RemoveAll() }()
	if !checkTenant(w, r, r.FormValue("tenantId")) {
		return
	}
	var files []engine.Resource
	for _, fh := range r.MultipartForm.File["resources"] {
		b, err := readPart(fh)
		if err != nil {
			invalid(w, r, "resource %q: %v", fh.Filename, err)
			return
		}
		files = append(files, engine.Resource{Name: fh.Filename, XML: b})
	}
	dep, err := h.svc.Deploy(r.Context(), files)
	if err != nil {
		fail(w, r, err)
		return
	}
	out := deploymentResult{DeploymentKey: dep.Key, TenantID: tenant, Deployments: []deployed{}}
	for _, p := range dep.Processes {
		out.Deployments = append(out.Deployments, deployed{ProcessDefinition: &processMeta{ProcessDefinitionID: p.ProcessID,
			ProcessDefinitionVersion: p.Version, ResourceName: p.Resource, TenantID: tenant, ProcessDefinitionKey: p.Key}})
	}
	reply(w, http.StatusOK, out)
}

func readPart(fh *multipart.FileHeader) ([]byte, error) {
	f, err := fh.Open()
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

// creation is a process instance creation request.
type creation struct {
	ProcessDefinitionID      string         `json:"processDefinitionId"`
	ProcessDefinitionKey     key            `json:"processDefinitionKey"`
	ProcessDefinitionVersion *int           `json:"processDefinitionVersion"`
	Variables                map[string]any `json:"variables"`
	TenantID                 string         `json:"tenantId"`
	StartInstructions        []any          `json:"startInstructions"`
	RuntimeInstructions      []any          `json:"runtimeInstructions"`
	AwaitCompletion          bool           `json:"awaitCompletion"`
	FetchVariables           []string       `json:"fetchVariables"`
	RequestTimeout           int64          `json:"requestTimeout"`
	Tags                     []string       `json:"tags"`
	BusinessID               string         `json:"businessId"`
	OperationReference       *int64         `json:"operationReference"`
}

type created struct {
	ProcessDefinitionID      string         `json:"processDefinitionId"`
	ProcessDefinitionVersion int            `json:"processDefinitionVersion"`
	TenantID                 string         `json:"tenantId"`
	Variables                map[string]any `json:"variables"`
	ProcessDefinitionKey     camunda8.Key   `json:"processDefinitionKey,string"`
	ProcessInstanceKey       camunda8.Key   `json:"processInstanceKey,string"`
	Tags                     []string       `json:"tags"`
	BusinessID               *string        `json:"businessId"`
}

// createInstance starts an instance and, with awaitCompletion, waits for
// its end (requestTimeout, else Options.RequestTimeout): 504 when the
// wait ends first, and the instance runs on.
func (h *Handler) createInstance(w http.ResponseWriter, r *http.Request) {
	var c creation
	if !h.decode(w, r, &c) || !checkTenant(w, r, c.TenantID) {
		return
	}
	switch {
	case len(c.StartInstructions) > 0 || len(c.RuntimeInstructions) > 0:
		problem(w, r, http.StatusNotImplemented, "NOT_IMPLEMENTED", "start and runtime instructions are not supported by jetbpm yet: an instance starts at its none start event")
		return
	case len(c.Tags) > 0:
		invalid(w, r, "tags are not supported by jetbpm: instances have a business id (businessId) but no tags")
		return
	case c.RequestTimeout < 0:
		invalid(w, r, "expected requestTimeout to be at least 0, but it is %d", c.RequestTimeout)
		return
	case c.ProcessDefinitionKey == 0 && c.ProcessDefinitionID == "":
		invalid(w, r, "expected either a processDefinitionKey or a processDefinitionId, but none given")
		return
	}
	version := -1
	if c.ProcessDefinitionVersion != nil {
		version = *c.ProcessDefinitionVersion
	}
	st, err := h.svc.Start(r.Context(), camunda8.Start{DefinitionKey: int64(c.ProcessDefinitionKey), ProcessID: c.ProcessDefinitionID,
		Version: version, Variables: c.Variables, BusinessID: c.BusinessID})
	if err != nil {
		fail(w, r, err)
		return
	}
	out := created{ProcessDefinitionID: st.ProcessID, ProcessDefinitionVersion: st.Version, TenantID: tenant, Variables: map[string]any{},
		ProcessDefinitionKey: st.DefinitionKey, ProcessInstanceKey: st.InstanceKey, Tags: []string{}}
	if c.BusinessID != "" {
		out.BusinessID = &c.BusinessID
	}
	if c.AwaitCompletion {
		timeout := h.opts.RequestTimeout
		if c.RequestTimeout > 0 {
			timeout = time.Duration(c.RequestTimeout) * time.Millisecond
		}
		vars, err := h.svc.Await(r.Context(), st, timeout, c.FetchVariables)
		if err != nil {
			fail(w, r, err)
			return
		}
		out.Variables = vars
	}
	reply(w, http.StatusOK, out)
}

// processInstance is an instance as the API shows it.
type processInstance struct {
	ProcessDefinitionID         string       `json:"processDefinitionId"`
	ProcessDefinitionName       *string      `json:"processDefinitionName"`
	ProcessDefinitionVersion    int          `json:"processDefinitionVersion"`
	ProcessDefinitionVersionTag *string      `json:"processDefinitionVersionTag"`
	StartDate                   string       `json:"startDate"`
	EndDate                     *string      `json:"endDate"`
	State                       string       `json:"state"`
	HasIncident                 bool         `json:"hasIncident"`
	TenantID                    string       `json:"tenantId"`
	ProcessInstanceKey          camunda8.Key `json:"processInstanceKey,string"`
	ProcessDefinitionKey        camunda8.Key `json:"processDefinitionKey,string"`
	ParentProcessInstanceKey    *string      `json:"parentProcessInstanceKey"`
	ParentElementInstanceKey    *string      `json:"parentElementInstanceKey"`
	RootProcessInstanceKey      *string      `json:"rootProcessInstanceKey"`
	Tags                        []string     `json:"tags"`
	BusinessID                  *string      `json:"businessId"`
}

// state is an instance's state in Camunda's terms.
func state(s instance.Status) string {
	switch s {
	case instance.Active, engine.StatusIncident:
		return "ACTIVE"
	case instance.Completed:
		return "COMPLETED"
	}
	return "TERMINATED"
}

// showInstance shows an instance, giving it (and its parent) a key.
func (h *Handler) showInstance(ctx context.Context, v *engine.InstanceView) (*processInstance, error) {
	ids := h.svc.IDs()
	ik, err := ids.InstanceKey(ctx, v.ID)
	if err != nil {
		return nil, err
	}
	dk, err := ids.DefinitionKey(ctx, v.ProcessID, v.Version)
	if err != nil {
		return nil, err
	}
	p := &processInstance{ProcessDefinitionID: v.ProcessID, ProcessDefinitionVersion: v.Version, StartDate: timestamp(v.StartedAt),
		State: state(v.Status), HasIncident: len(v.Incidents) > 0, TenantID: tenant, ProcessInstanceKey: ik, ProcessDefinitionKey: dk,
		Tags: []string{}}
	if m, err := h.svc.Engine().Process(ctx, v.ProcessID, v.Version); err == nil && m.Name != "" { // cached
		p.ProcessDefinitionName = &m.Name
	}
	if v.EndedAt != nil {
		end := timestamp(*v.EndedAt)
		p.EndDate = &end
	}
	if v.ParentInstance != "" {
		pk, err := ids.InstanceKey(ctx, v.ParentInstance)
		if err != nil {
			return nil, err
		}
		t := pk.String()
		p.ParentProcessInstanceKey = &t
	}
	if v.BusinessKey != "" {
		p.BusinessID = &v.BusinessKey
	}
	return p, nil
}

func (h *Handler) getInstance(w http.ResponseWriter, r *http.Request) {
	k, ok := pathKey(w, r)
	if !ok {
		return
	}
	id, err := h.svc.Instance(r.Context(), k)
	if err != nil {
		fail(w, r, err)
		return
	}
	v, err := h.svc.Engine().Instance(r.Context(), id)
	if err != nil {
		if errors.Is(err, engine.ErrNotFound) {
			err = camunda8.Reject(engine.ErrNotFound, "expected to find a process instance with key '%d', but none found", k)
		}
		fail(w, r, err)
		return
	}
	p, err := h.showInstance(r.Context(), v)
	if err != nil {
		fail(w, r, err)
		return
	}
	reply(w, http.StatusOK, p)
}
