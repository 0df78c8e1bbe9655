package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go"

	"github.com/jetbpm/jetbpm/engine"
	"github.com/jetbpm/jetbpm/incidents"
	"github.com/jetbpm/jetbpm/streams"
)

// ErrNoEngine means no engine node answered: none is running or none can
// be reached with this connection's permissions.
var ErrNoEngine = errors.New("no jetbpm engine is serving the API (is 'jetbpm serve' running?)")

// Client calls the engine API over a NATS connection.
type Client struct {
	nc *nats.Conn
}

// NewClient returns a client on nc.
func NewClient(nc *nats.Conn) *Client { return &Client{nc: nc} }

// Deploy deploys BPMN documents.
func (c *Client) Deploy(ctx context.Context, files ...File) ([]engine.Deployment, error) {
	var out DeployResponse
	err := c.call(ctx, OpDeploy, DeployRequest{Files: files}, &out)
	return out.Deployments, err
}

// Start starts an instance and returns its id.
func (c *Client) Start(ctx context.Context, req StartRequest) (string, error) {
	var out StartResponse
	err := c.call(ctx, OpStart, req, &out)
	return out.ID, err
}

// PublishMessage publishes a message and returns its id.
func (c *Client) PublishMessage(ctx context.Context, req MessageRequest) (string, error) {
	var out MessagePublishResponse
	err := c.call(ctx, OpMessagePublish, req, &out)
	return out.ID, err
}

// CorrelateMessage delivers a message to a waiting subscription and
// returns the instance it reached; it fails when none waits.
func (c *Client) CorrelateMessage(ctx context.Context, req MessageRequest) (string, error) {
	var out MessageCorrelateResponse
	err := c.call(ctx, OpMessageCorrelate, req, &out)
	return out.Instance, err
}

// Instance reads one instance.
func (c *Client) Instance(ctx context.Context, id string) (*engine.InstanceView, error) {
	var out engine.InstanceView
	if err := c.call(ctx, OpInstanceGet, InstanceRequest{ID: id}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Instances lists instances.
func (c *Client) Instances(ctx context.Context, req ListRequest) ([]*engine.InstanceView, error) {
	var out ListResponse
	err := c.call(ctx, OpInstanceList, req, &out)
	return out.Instances, err
}

// Cancel terminates an instance and returns its final view.
func (c *Client) Cancel(ctx context.Context, id, reason string) (*engine.InstanceView, error) {
	var out engine.InstanceView
	if err := c.call(ctx, OpInstanceCancel, InstanceRequest{ID: id, Reason: reason}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Compensate runs the compensation handlers of an instance's journal
// (node's only, when not empty) and then terminates it; it answers once
// the request is stored, with the instance's view at that moment.
func (c *Client) Compensate(ctx context.Context, id, node string) (*engine.InstanceView, error) {
	var out engine.InstanceView
	if err := c.call(ctx, OpInstanceCompensate, CompensateRequest{ID: id, Node: node}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// SetVariables writes vars (a JSON object) to an active instance's root
// scope and answers with its view once the instance has applied them;
// requestID (may be empty) makes a retried request apply once.
func (c *Client) SetVariables(ctx context.Context, id string, vars json.RawMessage, requestID string) (*engine.InstanceView, error) {
	var out engine.InstanceView
	if err := c.call(ctx, OpInstanceSetVars, SetVarsRequest{ID: id, Vars: vars, RequestID: requestID}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Trigger moves on the token of instance id waiting at plain receive task
// node ("": its only one) with vars (a JSON object, may be nil) as the
// task's results, and answers with the instance once it has applied it;
// requestID (may be empty) makes a retried request apply once.
func (c *Client) Trigger(ctx context.Context, id, node string, vars json.RawMessage, requestID string) (*engine.InstanceView, error) {
	var out engine.InstanceView
	if err := c.call(ctx, OpInstanceTrigger, TriggerRequest{ID: id, Node: node, Vars: vars, RequestID: requestID}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Incidents lists incident records.
func (c *Client) Incidents(ctx context.Context, req IncidentListRequest) ([]*incidents.Record, error) {
	var out IncidentListResponse
	err := c.call(ctx, OpIncidentList, req, &out)
	return out.Incidents, err
}

// IncidentPage lists one page of incident records (req.Limit, req.After,
// req.Before), with the cursors of the pages around it.
func (c *Client) IncidentPage(ctx context.Context, req IncidentListRequest) (*IncidentListResponse, error) {
	var out IncidentListResponse
	if err := c.call(ctx, OpIncidentList, req, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Incident reads one incident with its variable snapshots.
func (c *Client) Incident(ctx context.Context, id string) (*engine.IncidentView, error) {
	return c.incident(ctx, OpIncidentGet, IncidentRequest{ID: id})
}

// RetryIncident re-enters the incident's node now and returns the record.
func (c *Client) RetryIncident(ctx context.Context, id string) (*engine.IncidentView, error) {
	return c.incident(ctx, OpIncidentRetry, IncidentRequest{ID: id})
}

// ResolveIncident sets vars (a JSON object; nil for none), continues from
// the incident's node as if it had completed and returns the record.
func (c *Client) ResolveIncident(ctx context.Context, id string, vars json.RawMessage) (*engine.IncidentView, error) {
	return c.incident(ctx, OpIncidentResolve, IncidentRequest{ID: id, Vars: vars})
}

// AbandonIncident closes the incident as dead-lettered, cancelling its
// token, and returns the record.
func (c *Client) AbandonIncident(ctx context.Context, id string) (*engine.IncidentView, error) {
	return c.incident(ctx, OpIncidentAbandon, IncidentRequest{ID: id})
}

func (c *Client) incident(ctx context.Context, op string, req IncidentRequest) (*engine.IncidentView, error) {
	var out engine.IncidentView
	if err := c.call(ctx, op, req, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

func (c *Client) call(ctx context.Context, op string, req, out any) error {
	body, err := json.Marshal(req)
	if err != nil {
		return err
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultTimeout)
		defer cancel()
	}
	msg, err := c.nc.RequestWithContext(ctx, streams.APISubject(op), body)
	if errors.Is(err, nats.ErrNoResponders) {
		return ErrNoEngine
	}
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	var r reply
	if err := json.Unmarshal(msg.Data, &r); err != nil {
		return fmt.Errorf("%s: malformed reply: %w", op, err)
	}
	if r.Error != nil {
		return r.Error
	}
	return json.Unmarshal(r.Result, out)
}

// ClusterStatus returns the engine nodes, the partitions each holds and
// each partition's backlog, as the node that answers knows them.
func (c *Client) ClusterStatus(ctx context.Context) (*engine.ClusterView, error) {
	var out engine.ClusterView
	if err := c.call(ctx, OpClusterStatus, struct{}{}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// StoreCheck asks the engine to check the store now and lists the
// damage records.
func (c *Client) StoreCheck(ctx context.Context) (*StoreCheckResponse, error) {
	var out StoreCheckResponse
	if err := c.call(ctx, OpStoreCheck, struct{}{}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// StoreRecords lists the damage records without checking the store; the
// answer's report is empty.
func (c *Client) StoreRecords(ctx context.Context) (*StoreCheckResponse, error) {
	var out StoreCheckResponse
	if err := c.call(ctx, OpStoreRecords, struct{}{}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// StoreDismiss closes a damage record as dismissed with reason, and
// returns the records as StoreCheck does.
func (c *Client) StoreDismiss(ctx context.Context, key, reason string) (*StoreCheckResponse, error) {
	var out StoreCheckResponse
	if err := c.call(ctx, OpStoreDismiss, LostRequest{Key: key, Reason: reason}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// StoreRecreate starts a new instance in place of the lost instance of a
// damage record and returns its id.
func (c *Client) StoreRecreate(ctx context.Context, key string) (string, error) {
	var out RecreateResponse
	err := c.call(ctx, OpStoreRecreate, LostRequest{Key: key}, &out)
	return out.ID, err
}
