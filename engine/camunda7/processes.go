package camunda7

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/jetbpm/jetbpm/engine"
	"github.com/jetbpm/jetbpm/engine/api"
)

// processDefinition is Camunda 7's ProcessDefinitionDto.
type processDefinition struct {
	ID                  string  `json:"id"`
	Key                 string  `json:"key"`
	Category            *string `json:"category"`
	Description         *string `json:"description"`
	Name                *string `json:"name"`
	Version             int     `json:"version"`
	Resource            *string `json:"resource"`
	DeploymentID        *string `json:"deploymentId"`
	Diagram             *string `json:"diagram"`
	Suspended           bool    `json:"suspended"`
	TenantID            *string `json:"tenantId"`
	VersionTag          *string `json:"versionTag"`
	HistoryTimeToLive   *int    `json:"historyTimeToLive"`
	StartableInTasklist bool    `json:"startableInTasklist"`
}

// definition describes version version of process processID; name,
// resource and deployment are "" when unknown, ttl as the model writes it.
func definition(processID string, version int, name, resource, deployment, ttl string) processDefinition {
	return processDefinition{ID: definitionID(processID, version), Key: processID, Version: version, Name: nullIfEmpty(name),
		Resource: nullIfEmpty(resource), DeploymentID: nullIfEmpty(deployment), HistoryTimeToLive: historyDays(ttl), StartableInTasklist: true}
}

// historyDays reads camunda:historyTimeToLive, days or P<n>D, as Camunda
// 7 does; anything else is null.
func historyDays(ttl string) *int {
	s := ttl
	if strings.HasPrefix(s, "P") {
		if len(s) < 3 || !strings.HasSuffix(s, "D") {
			return nil
		}
		s = s[1 : len(s)-1]
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return nil
	}
	return &n
}

// describeDefinition reads what GET /process-definition and a deploy's answer
// show of version v of processID, deployed from resource by deployment.
func (h *Handler) describeDefinition(ctx context.Context, processID string, v int, resource, deployment string) (processDefinition, error) {
	p, err := h.eng.Process(ctx, processID, v)
	if err != nil {
		return processDefinition{}, err
	}
	return definition(processID, v, p.Name, resource, deployment, p.HistoryTimeToLive), nil
}

// parseDefinitionID splits "<processId>:<version>".
func parseDefinitionID(id string) (string, int, error) {
	i := strings.LastIndexByte(id, ':')
	if i > 0 {
		if v, err := strconv.Atoi(id[i+1:]); err == nil && v > 0 {
			return id[:i], v, nil
		}
	}
	return "", 0, fmt.Errorf("%w: process definition id %q: want <key>:<version>, e.g. order:3", engine.ErrNotFound, id)
}

// deploymentFields are the form fields of a deployment; every other part
// is a resource.
var deploymentFields = map[string]bool{"deployment-name": true, "deployment-source": true, "deployment-activation-time": true,
	"enable-duplicate-filtering": true, "deploy-changed-only": true, "tenant-id": true}

// maxDeployment bounds a deployment's multipart body.
const maxDeployment = 16 << 20

// createDeployment takes a multipart form as Camunda Modeler's deploy
// button sends it: every part but the fields below is a resource (BPMN
// files are deployed, others refused); the fields deployment-name,
// deployment-source, enable-duplicate-filtering, deploy-changed-only and
// tenant-id are read or ignored.
func (h *Handler) createDeployment(w http.ResponseWriter, r *http.Request) {
	if !h.authorize(w, r, Access{Operation: OpDeploy}) {
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxDeployment)
	mr, err := r.MultipartReader()
	if err != nil {
		writeError(w, http.StatusBadRequest, "InvalidRequestException", "deployment/create wants a multipart/form-data body: "+err.Error())
		return
	}
	var req api.DeployRequest
	fields := map[string]string{}
	for {
		p, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			writeError(w, http.StatusBadRequest, "InvalidRequestException", "malformed multipart body: "+err.Error())
			return
		}
		data, err := io.ReadAll(p)
		if err != nil {
			writeError(w, http.StatusBadRequest, "InvalidRequestException", "malformed multipart body: "+err.Error())
			return
		}
		if deploymentFields[p.FormName()] {
			fields[p.FormName()] = string(data)
			continue
		}
		// As in Camunda, every other part is a resource.
		name := p.FileName()
		if name == "" {
			name = p.FormName()
		}
		if !strings.HasSuffix(name, ".bpmn") && !strings.HasSuffix(name, ".xml") && !strings.HasSuffix(name, ".js") {
			writeError(w, http.StatusBadRequest, "InvalidRequestException", fmt.Sprintf("resource %q: jetbpm deploys BPMN files (.bpmn, .xml) and the JavaScript they load (.js) only", name))
			return
		}
		req.Files = append(req.Files, api.File{Name: name, XML: string(data)})
	}
	res, err := h.api.Do(r.Context(), api.OpDeploy, mustJSON(req))
	if err != nil {
		writeEngineError(w, err)
		return
	}
	deps := res.(api.DeployResponse).Deployments
	now := time.Now()
	// The deploy's id is its new versions'; one that changed nothing gets
	// an id of its own, as Camunda makes an empty deployment.
	id := "deployment-" + strconv.FormatInt(now.UnixNano(), 36)
	for _, d := range deps {
		if d.New && d.DeploymentID != "" {
			id = d.DeploymentID
			break
		}
	}
	changedOnly := fields["deploy-changed-only"] == "true" || fields["enable-duplicate-filtering"] == "true"
	out := map[string]any{
		"links": []any{}, "id": id, "name": nullIfEmpty(fields["deployment-name"]), "source": nullIfEmpty(fields["deployment-source"]),
		"tenantId": nil, "deploymentTime": formatDate(now), "deployedCaseDefinitions": nil, "deployedDecisionDefinitions": nil,
		"deployedDecisionRequirementsDefinitions": nil,
	}
	defs := map[string]processDefinition{}
	for _, d := range deps {
		if changedOnly && !d.New {
			continue // Camunda deploys no new definition for it
		}
		pd, err := h.describeDefinition(r.Context(), d.ProcessID, d.Version, d.Resource, d.DeploymentID)
		if err != nil {
			writeEngineError(w, err)
			return
		}
		defs[pd.ID] = pd
	}
	if len(defs) > 0 {
		out["deployedProcessDefinitions"] = defs
	} else {
		out["deployedProcessDefinitions"] = nil
	}
	writeJSON(w, http.StatusOK, out)
}

func nullIfEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // only types of this package, which always encode
	}
	return b
}

// listProcessDefinitions answers GET /process-definition: every deployed
// version of every process, by key then version; filters key (or
// processDefinitionKey), version and latestVersion=true; paging with
// firstResult and maxResults.
func (h *Handler) listProcessDefinitions(w http.ResponseWriter, r *http.Request) {
	if !h.authorize(w, r, Access{Operation: OpRead}) {
		return
	}
	q := r.URL.Query()
	key := q.Get("key")
	if key == "" {
		key = q.Get("processDefinitionKey")
	}
	version, err1 := atoiDefault(q.Get("version"), 0)
	first, err2 := atoiDefault(q.Get("firstResult"), 0)
	limit, err3 := atoiDefault(q.Get("maxResults"), 0)
	if err := errors.Join(err1, err2, err3); err != nil || version < 0 || first < 0 || limit < 0 {
		writeError(w, http.StatusBadRequest, "InvalidRequestException", "version, firstResult and maxResults must be non-negative integers")
		return
	}
	latestOnly := q.Get("latestVersion") == "true"
	var infos []engine.ProcessInfo
	if key != "" {
		info, err := h.eng.ProcessInfo(r.Context(), key, 0)
		if err == nil {
			infos = append(infos, info)
		} else if !errors.Is(err, engine.ErrNotFound) {
			writeEngineError(w, err)
			return
		}
	} else {
		var err error
		if infos, err = h.eng.Processes(r.Context()); err != nil {
			writeEngineError(w, err)
			return
		}
	}
	out := []processDefinition{}
	for _, info := range infos {
		versions := info.Versions
		if latestOnly || len(versions) == 0 {
			versions = []int{info.Version}
		}
		for _, v := range versions {
			if version != 0 && v != version {
				continue
			}
			resource, deployment, err := h.eng.ProcessOrigin(r.Context(), info.ID, v)
			if err != nil {
				writeEngineError(w, err)
				return
			}
			pd, err := h.describeDefinition(r.Context(), info.ID, v, resource, deployment)
			if err != nil {
				writeEngineError(w, err)
				return
			}
			out = append(out, pd)
		}
	}
	out = out[min(first, len(out)):]
	if limit > 0 && limit < len(out) {
		out = out[:limit]
	}
	writeJSON(w, http.StatusOK, out)
}

// startRequest is Camunda 7's StartProcessInstanceDto (the fields jetbpm
// uses; the others are refused when set).
type startRequest struct {
	Variables             map[string]Variable `json:"variables"`
	BusinessKey           string              `json:"businessKey"`
	WithVariablesInReturn bool                `json:"withVariablesInReturn"`
	StartInstructions     json.RawMessage     `json:"startInstructions"`
}

func (h *Handler) startByKey(w http.ResponseWriter, r *http.Request) {
	h.start(w, r, r.PathValue("key"), 0)
}

func (h *Handler) startByID(w http.ResponseWriter, r *http.Request) {
	key, version, err := parseDefinitionID(r.PathValue("id"))
	if err != nil {
		writeError(w, http.StatusNotFound, "RestException", err.Error())
		return
	}
	h.start(w, r, key, version)
}

func (h *Handler) start(w http.ResponseWriter, r *http.Request, key string, version int) {
	if !h.authorize(w, r, Access{Operation: OpStart}) {
		return
	}
	var req startRequest
	if !decodeBody(w, r, &req) {
		return
	}
	if len(req.StartInstructions) > 0 && string(req.StartInstructions) != "null" {
		writeError(w, http.StatusBadRequest, "InvalidRequestException", "startInstructions are not supported by jetbpm")
		return
	}
	vars, err := decodeVariables(req.Variables)
	if err != nil {
		writeError(w, http.StatusBadRequest, "InvalidRequestException", err.Error())
		return
	}
	res, err := h.do(r.Context(), api.OpStart, api.StartRequest{ProcessID: key, Version: version, Vars: mustJSON(vars), BusinessKey: req.BusinessKey})
	if errors.Is(err, engine.ErrNotFound) {
		writeError(w, http.StatusNotFound, "RestException", fmt.Sprintf("No process definition for key %q (version %d; 0 is the latest): %v", key, version, err))
		return
	}
	if err != nil {
		writeEngineError(w, err)
		return
	}
	view, err := h.eng.Instance(r.Context(), res.(api.StartResponse).ID)
	if err != nil {
		writeEngineError(w, err)
		return
	}
	out := instanceOf(view)
	if out.BusinessKey == nil { // a start not yet applied shows no business key
		out.BusinessKey = nullIfEmpty(req.BusinessKey)
	}
	if req.WithVariablesInReturn {
		out.Variables = encodeVariables(view.Variables, nil)
	}
	writeJSON(w, http.StatusOK, out)
}

// processInstance is Camunda 7's ProcessInstanceDto (with variables for
// a start withVariablesInReturn).
type processInstance struct {
	Links          []any                  `json:"links"`
	ID             string                 `json:"id"`
	DefinitionID   string                 `json:"definitionId"`
	DefinitionKey  string                 `json:"definitionKey"`
	BusinessKey    *string                `json:"businessKey"`
	CaseInstanceID *string                `json:"caseInstanceId"`
	Ended          bool                   `json:"ended"`
	Suspended      bool                   `json:"suspended"`
	TenantID       *string                `json:"tenantId"`
	Variables      map[string]outVariable `json:"variables,omitempty"`
}

func instanceOf(v *engine.InstanceView) processInstance {
	return processInstance{Links: []any{}, ID: v.ID, DefinitionID: definitionID(v.ProcessID, v.Version), DefinitionKey: v.ProcessID,
		BusinessKey: nullIfEmpty(v.BusinessKey), Ended: v.Status.Finished()}
}

func (h *Handler) getProcessInstance(w http.ResponseWriter, r *http.Request) {
	if !h.authorize(w, r, Access{Operation: OpRead}) {
		return
	}
	id := r.PathValue("id")
	v, err := h.eng.Instance(r.Context(), id)
	if errors.Is(err, engine.ErrNotFound) || err == nil && v.Status.Finished() {
		// Camunda's runtime API knows running instances only.
		writeError(w, http.StatusNotFound, "InvalidRequestException", fmt.Sprintf("Process instance with id %s does not exist", id))
		return
	}
	if err != nil {
		writeEngineError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, instanceOf(v))
}

func (h *Handler) deleteProcessInstance(w http.ResponseWriter, r *http.Request) {
	if !h.authorize(w, r, Access{Operation: OpCancel}) {
		return
	}
	id := r.PathValue("id")
	_, err := h.do(r.Context(), api.OpInstanceCancel, api.InstanceRequest{ID: id, Reason: "deleted over the Camunda 7 REST API"})
	if errors.Is(err, engine.ErrNotFound) || errors.Is(err, engine.ErrFinished) {
		writeError(w, http.StatusNotFound, "InvalidRequestException", fmt.Sprintf("Process instance with id %s does not exist", id))
		return
	}
	if err != nil {
		writeEngineError(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// modifyRequest is the body of POST /process-instance/{id}/variables.
type modifyRequest struct {
	Modifications map[string]Variable `json:"modifications"`
	Deletions     []string            `json:"deletions"`
}

// modifyVariables writes typed variables to a running instance's root
// scope (engine.Engine.SetVariables). jetbpm never deletes a variable:
// deletions are refused, naming them.
func (h *Handler) modifyVariables(w http.ResponseWriter, r *http.Request) {
	if !h.authorize(w, r, Access{Operation: OpModify}) {
		return
	}
	var req modifyRequest
	if !decodeBody(w, r, &req) {
		return
	}
	if len(req.Deletions) > 0 {
		writeError(w, http.StatusBadRequest, "InvalidRequestException", fmt.Sprintf("deleting variables (%s) is not supported by jetbpm; set them to null instead", strings.Join(req.Deletions, ", ")))
		return
	}
	vars, err := decodeVariables(req.Modifications)
	if err != nil {
		writeError(w, http.StatusBadRequest, "InvalidRequestException", err.Error())
		return
	}
	id := r.PathValue("id")
	if len(vars) == 0 {
		// Camunda accepts an empty modification and changes nothing.
		v, err := h.eng.Instance(r.Context(), id)
		if err == nil && v.Status.Finished() {
			err = engine.ErrFinished
		}
		if err != nil {
			h.modifyError(w, id, err)
			return
		}
		w.WriteHeader(http.StatusNoContent)
		return
	}
	if _, err := h.eng.SetVariables(r.Context(), id, vars); err != nil {
		h.modifyError(w, id, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (h *Handler) modifyError(w http.ResponseWriter, id string, err error) {
	if errors.Is(err, engine.ErrNotFound) || errors.Is(err, engine.ErrFinished) {
		writeError(w, http.StatusNotFound, "InvalidRequestException", fmt.Sprintf("Cannot modify variables for process instance %s: it does not exist", id))
		return
	}
	if errors.Is(err, engine.ErrInvalid) || errors.Is(err, engine.ErrTooLarge) {
		writeError(w, http.StatusBadRequest, "InvalidRequestException", err.Error())
		return
	}
	writeEngineError(w, err)
}
