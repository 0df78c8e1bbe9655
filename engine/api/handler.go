package api

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jetbpm/jetbpm/engine"
	"github.com/jetbpm/jetbpm/engine/instance"
	"github.com/jetbpm/jetbpm/engine/lost"
	"github.com/jetbpm/jetbpm/engine/storecheck"
)

// A Handler runs the API operations against one engine node, independent
// of the transport: the NATS server (Serve) and any other front end (an
// HTTP layer, say) hand it an operation name and a JSON request, so each
// operation's logic lives in one place.
type Handler struct {
	eng *engine.Engine
}

// NewHandler returns a Handler for eng.
func NewHandler(eng *engine.Engine) *Handler { return &Handler{eng: eng} }

// Do runs one operation: op is its name (OpStart, …), data its JSON
// request. It returns the result to encode as JSON, or an error that
// toError (and the HTTP layer) classify by the engine's error kinds.
func (h *Handler) Do(ctx context.Context, op string, data []byte) (any, error) {
	decode := func(v any) error {
		if err := json.Unmarshal(data, v); err != nil {
			return fmt.Errorf("%w: %s request: %v", engine.ErrInvalid, op, err)
		}
		return nil
	}
	switch op {
	case OpDeploy:
		var req DeployRequest
		if err := decode(&req); err != nil {
			return nil, err
		}
		return h.deploy(ctx, req)
	case OpStart:
		var req StartRequest
		if err := decode(&req); err != nil {
			return nil, err
		}
		vars, err := decodeVars(req.Vars)
		if err != nil {
			return nil, err
		}
		opts := []engine.StartOption{engine.Version(req.Version)}
		if req.ID != "" {
			opts = append(opts, engine.InstanceID(req.ID))
		}
		if req.BusinessKey != "" {
			opts = append(opts, engine.BusinessKey(req.BusinessKey))
		}
		id, err := h.eng.Start(ctx, req.ProcessID, vars, opts...)
		return StartResponse{ID: id}, err
	case OpInstanceGet:
		var req InstanceRequest
		if err := decode(&req); err != nil {
			return nil, err
		}
		return h.eng.Instance(ctx, req.ID)
	case OpInstanceList:
		var req ListRequest
		if err := decode(&req); err != nil {
			return nil, err
		}
		f, err := req.Filter()
		if err != nil {
			return nil, err
		}
		list, err := h.eng.Instances(ctx, f)
		if list == nil {
			list = []*engine.InstanceView{}
		}
		return ListResponse{Instances: list}, err
	case OpInstanceCancel:
		var req InstanceRequest
		if err := decode(&req); err != nil {
			return nil, err
		}
		if err := h.eng.Cancel(ctx, req.ID, req.Reason); err != nil {
			return nil, err
		}
		return h.eng.Instance(ctx, req.ID)
	case OpInstanceCompensate:
		var req CompensateRequest
		if err := decode(&req); err != nil {
			return nil, err
		}
		if err := h.eng.Compensate(ctx, req.ID, req.Node); err != nil {
			return nil, err
		}
		return h.eng.Instance(ctx, req.ID)
	case OpInstanceSetVars:
		var req SetVarsRequest
		if err := decode(&req); err != nil {
			return nil, err
		}
		vars, err := decodeVars(req.Vars)
		if err != nil {
			return nil, err
		}
		return h.eng.SetVariables(ctx, req.ID, vars, requestID(req.RequestID)...)
	case OpInstanceTrigger:
		var req TriggerRequest
		if err := decode(&req); err != nil {
			return nil, err
		}
		vars, err := decodeVars(req.Vars)
		if err != nil {
			return nil, err
		}
		return h.eng.Trigger(ctx, req.ID, req.Node, vars, requestID(req.RequestID)...)
	case OpClusterStatus:
		var req struct{}
		if err := decode(&req); err != nil {
			return nil, err
		}
		return h.eng.Cluster(ctx)
	case OpStoreCheck:
		var req struct{}
		if err := decode(&req); err != nil {
			return nil, err
		}
		return h.storeCheck(ctx)
	case OpStoreRecords:
		var req struct{}
		if err := decode(&req); err != nil {
			return nil, err
		}
		return h.storeRecords(ctx, storecheck.Report{})
	case OpStoreDismiss:
		var req LostRequest
		if err := decode(&req); err != nil {
			return nil, err
		}
		if err := h.eng.DismissLost(ctx, req.Key, req.Reason); err != nil {
			return nil, err
		}
		return h.storeCheck(ctx)
	case OpStoreRecreate:
		var req LostRequest
		if err := decode(&req); err != nil {
			return nil, err
		}
		id, err := h.eng.RecreateLost(ctx, req.Key)
		if err != nil {
			return nil, err
		}
		return RecreateResponse{ID: id}, nil
	case OpIncidentList:
		var req IncidentListRequest
		if err := decode(&req); err != nil {
			return nil, err
		}
		f, err := req.Filter()
		if err != nil {
			return nil, err
		}
		pg, err := req.pager()
		if err != nil {
			return nil, err
		}
		list, err := h.eng.Incidents(ctx, f)
		if err != nil {
			return nil, err
		}
		return pg.page(list), nil
	case OpIncidentGet, OpIncidentRetry, OpIncidentResolve, OpIncidentAbandon:
		var req IncidentRequest
		if err := decode(&req); err != nil {
			return nil, err
		}
		return h.incident(ctx, op, req)
	case OpTaskList:
		var req TaskListRequest
		if err := decode(&req); err != nil {
			return nil, err
		}
		f, err := req.Filter()
		if err != nil {
			return nil, err
		}
		list, err := h.eng.Tasks(ctx, f)
		if list == nil {
			list = []*instance.Task{}
		}
		return TaskListResponse{Tasks: list}, err
	case OpTaskForm:
		var req TaskRequest
		if err := decode(&req); err != nil {
			return nil, err
		}
		if err := req.check(op); err != nil {
			return nil, err
		}
		schema, err := h.eng.TaskForm(ctx, req.ID)
		if err != nil {
			return nil, err
		}
		return TaskFormResponse{TaskID: req.ID, Schema: json.RawMessage(schema)}, nil
	case OpTaskGet, OpTaskClaim, OpTaskUnclaim, OpTaskAssign, OpTaskUpdate, OpTaskComplete, OpTaskError, OpTaskEscalate:
		var req TaskRequest
		if err := decode(&req); err != nil {
			return nil, err
		}
		return h.task(ctx, op, req)
	case OpMessagePublish, OpMessageCorrelate:
		var req MessageRequest
		if err := decode(&req); err != nil {
			return nil, err
		}
		m, err := req.Message()
		if err != nil {
			return nil, err
		}
		if op == OpMessagePublish {
			id, err := h.eng.PublishMessage(ctx, m)
			return MessagePublishResponse{ID: id}, err
		}
		if m.TTL != 0 {
			return nil, fmt.Errorf("%w: message.correlate takes no ttl: a message that reaches no subscription is not kept", engine.ErrInvalid)
		}
		inst, err := h.eng.CorrelateMessage(ctx, m)
		return MessageCorrelateResponse{Instance: inst}, err
	case OpProcessList:
		var req struct{}
		if err := decode(&req); err != nil {
			return nil, err
		}
		list, err := h.eng.Processes(ctx)
		return ProcessListResponse{Processes: list}, err
	case OpProcessGet:
		var req ProcessRequest
		if err := decode(&req); err != nil {
			return nil, err
		}
		return h.process(ctx, req)
	case OpSignalBroadcast:
		var req SignalRequest
		if err := decode(&req); err != nil {
			return nil, err
		}
		return h.signal(ctx, req)
	}
	return nil, fmt.Errorf("%w: unknown operation %q", engine.ErrInvalid, op)
}

// incident reads or operates one incident and answers with its record as
// it is afterwards.
func (h *Handler) incident(ctx context.Context, op string, req IncidentRequest) (*engine.IncidentView, error) {
	var err error
	switch op {
	case OpIncidentRetry:
		err = h.eng.RetryIncident(ctx, req.ID)
	case OpIncidentResolve:
		var vars map[string]any
		if vars, err = decodeVars(req.Vars); err == nil {
			err = h.eng.ResolveIncident(ctx, req.ID, vars)
		}
	case OpIncidentAbandon:
		err = h.eng.AbandonIncident(ctx, req.ID)
	}
	if err != nil {
		return nil, err
	}
	return h.eng.Incident(ctx, req.ID)
}

// deploy imports every file, then deploys all their processes or none
// (engine.DeployResources).
func (h *Handler) deploy(ctx context.Context, req DeployRequest) (DeployResponse, error) {
	res := make([]engine.Resource, len(req.Files))
	for i, f := range req.Files {
		res[i] = engine.Resource{Name: f.Name, XML: []byte(f.XML)}
	}
	deps, err := h.eng.DeployResources(ctx, res...)
	if err != nil {
		return DeployResponse{}, err
	}
	return DeployResponse{Deployments: deps}, nil
}

// requestID names a request by id, when the caller gave one.
func requestID(id string) []engine.RequestOption {
	if id == "" {
		return nil
	}
	return []engine.RequestOption{engine.RequestID(id)}
}

func (h *Handler) storeCheck(ctx context.Context) (*StoreCheckResponse, error) {
	report, err := h.eng.CheckStore(ctx)
	if err != nil {
		return nil, err
	}
	return h.storeRecords(ctx, report)
}

// storeRecords answers with report and every damage record.
func (h *Handler) storeRecords(ctx context.Context, report storecheck.Report) (*StoreCheckResponse, error) {
	recs, err := h.eng.LostRecords(ctx)
	if err != nil {
		return nil, err
	}
	out := &StoreCheckResponse{Report: report, Records: recs}
	if out.Records == nil {
		out.Records = []lost.Record{}
	}
	for _, r := range recs {
		if r.Status == lost.Open {
			out.Open++
		}
	}
	return out, nil
}
