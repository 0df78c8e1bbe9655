package api

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/jetbpm/jetbpm/engine"
	"github.com/jetbpm/jetbpm/engine/instance"
	"github.com/jetbpm/jetbpm/incidents"
	"github.com/jetbpm/jetbpm/streams"
)

// maxConcurrent bounds requests one node serves at once; cancel waits for
// the instance to stop, so requests must not run one at a time.
const maxConcurrent = 64

// Server answers API requests for one engine node.
type Server struct {
	eng *engine.Engine
	// maxPayload is the largest reply the NATS server takes.
	maxPayload int64
	log        *slog.Logger
	sub        *nats.Subscription
	sem        chan struct{}
	wg         sync.WaitGroup
	stop       context.CancelFunc
	ctx        context.Context
}

// Serve subscribes to the API subjects in the engine queue group.
func Serve(nc *nats.Conn, eng *engine.Engine, log *slog.Logger) (*Server, error) {
	if log == nil {
		log = slog.Default()
	}
	ctx, stop := context.WithCancel(context.Background())
	s := &Server{eng: eng, log: log, maxPayload: nc.MaxPayload(), sem: make(chan struct{}, maxConcurrent), ctx: ctx, stop: stop}
	sub, err := nc.QueueSubscribe(streams.APISubjects, streams.EngineQueue, s.handle)
	if err != nil {
		stop()
		return nil, fmt.Errorf("api: subscribe: %w", err)
	}
	s.sub = sub
	// The subscription must reach the server before Serve returns, or a
	// request sent right after would find no responder.
	if err := nc.Flush(); err != nil {
		_ = sub.Unsubscribe()
		stop()
		return nil, fmt.Errorf("api: subscribe: %w", err)
	}
	return s, nil
}

// Close stops taking requests, answers those already received and waits
// for them.
func (s *Server) Close() error {
	closed := s.sub.StatusChanged(nats.SubscriptionClosed)
	err := s.sub.Drain()
	if err == nil {
		// Drain returns at once; the subscription closes once every queued
		// request has been handed to handle.
		select {
		case <-closed:
		case <-time.After(DefaultTimeout):
		}
	}
	// Requests in flight get a grace period, then their context ends (a
	// cancel waiting for its instance, say) and they answer with an error.
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(closeGrace):
		s.stop()
		<-done
	}
	s.stop()
	return err
}

// closeGrace is how long Close lets requests in flight finish.
const closeGrace = 5 * time.Second

func (s *Server) handle(m *nats.Msg) {
	s.sem <- struct{}{}
	s.wg.Add(1)
	go func() {
		defer func() { <-s.sem; s.wg.Done() }()
		op := strings.TrimPrefix(m.Subject, streams.APISubject(""))
		ctx, cancel := context.WithTimeout(s.ctx, DefaultTimeout)
		defer cancel()
		result, err := s.dispatch(ctx, op, m.Data)
		var r reply
		if err != nil {
			r.Error = toError(err)
			s.log.Debug("api request failed", "op", op, "err", err)
		} else if r.Result, err = json.Marshal(result); err != nil {
			r.Error = toError(err)
		}
		body, _ := json.Marshal(r)
		if s.maxPayload > 0 && int64(len(body)) > s.maxPayload {
			// The server would refuse the reply and the client would wait
			// for nothing: say why instead.
			body, _ = json.Marshal(reply{Error: toError(fmt.Errorf("%w: the reply is %d bytes, over the NATS server's max payload of %d; ask for less (a lower limit)",
				engine.ErrTooLarge, len(body), s.maxPayload))})
		}
		if m.Reply != "" {
			_ = m.Respond(body)
		}
	}()
}

func (s *Server) dispatch(ctx context.Context, op string, data []byte) (any, error) {
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
		return s.deploy(ctx, req)
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
		id, err := s.eng.Start(ctx, req.ProcessID, vars, opts...)
		return StartResponse{ID: id}, err
	case OpInstanceGet:
		var req InstanceRequest
		if err := decode(&req); err != nil {
			return nil, err
		}
		return s.eng.Instance(ctx, req.ID)
	case OpInstanceList:
		var req ListRequest
		if err := decode(&req); err != nil {
			return nil, err
		}
		f, err := req.Filter()
		if err != nil {
			return nil, err
		}
		list, err := s.eng.Instances(ctx, f)
		if list == nil {
			list = []*engine.InstanceView{}
		}
		return ListResponse{Instances: list}, err
	case OpInstanceCancel:
		var req InstanceRequest
		if err := decode(&req); err != nil {
			return nil, err
		}
		if err := s.eng.Cancel(ctx, req.ID, req.Reason); err != nil {
			return nil, err
		}
		return s.eng.Instance(ctx, req.ID)
	case OpIncidentList:
		var req IncidentListRequest
		if err := decode(&req); err != nil {
			return nil, err
		}
		f, err := req.Filter()
		if err != nil {
			return nil, err
		}
		list, err := s.eng.Incidents(ctx, f)
		if list == nil {
			list = []*incidents.Record{}
		}
		return IncidentListResponse{Incidents: list}, err
	case OpIncidentGet, OpIncidentRetry, OpIncidentResolve, OpIncidentAbandon:
		var req IncidentRequest
		if err := decode(&req); err != nil {
			return nil, err
		}
		return s.incident(ctx, op, req)
	case OpTaskList:
		var req TaskListRequest
		if err := decode(&req); err != nil {
			return nil, err
		}
		f, err := req.Filter()
		if err != nil {
			return nil, err
		}
		list, err := s.eng.Tasks(ctx, f)
		if list == nil {
			list = []*instance.Task{}
		}
		return TaskListResponse{Tasks: list}, err
	case OpTaskGet, OpTaskClaim, OpTaskUnclaim, OpTaskAssign, OpTaskUpdate, OpTaskComplete, OpTaskError:
		var req TaskRequest
		if err := decode(&req); err != nil {
			return nil, err
		}
		return s.task(ctx, op, req)
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
			id, err := s.eng.PublishMessage(ctx, m)
			return MessagePublishResponse{ID: id}, err
		}
		if m.TTL != 0 {
			return nil, fmt.Errorf("%w: message.correlate takes no ttl: a message that reaches no subscription is not kept", engine.ErrInvalid)
		}
		inst, err := s.eng.CorrelateMessage(ctx, m)
		return MessageCorrelateResponse{Instance: inst}, err
	case OpSignalBroadcast:
		var req SignalRequest
		if err := decode(&req); err != nil {
			return nil, err
		}
		return s.signal(ctx, req)
	}
	return nil, fmt.Errorf("%w: unknown operation %q", engine.ErrInvalid, op)
}

// incident reads or operates one incident and answers with its record as
// it is afterwards.
func (s *Server) incident(ctx context.Context, op string, req IncidentRequest) (*engine.IncidentView, error) {
	var err error
	switch op {
	case OpIncidentRetry:
		err = s.eng.RetryIncident(ctx, req.ID)
	case OpIncidentResolve:
		var vars map[string]any
		if vars, err = decodeVars(req.Vars); err == nil {
			err = s.eng.ResolveIncident(ctx, req.ID, vars)
		}
	case OpIncidentAbandon:
		err = s.eng.AbandonIncident(ctx, req.ID)
	}
	if err != nil {
		return nil, err
	}
	return s.eng.Incident(ctx, req.ID)
}

// deploy imports every file, then deploys all their processes or none
// (engine.DeployAll).
func (s *Server) deploy(ctx context.Context, req DeployRequest) (DeployResponse, error) {
	if len(req.Files) == 0 {
		return DeployResponse{}, fmt.Errorf("%w: no files to deploy", engine.ErrInvalid)
	}
	procs, err := importAll(req.Files)
	if err != nil {
		return DeployResponse{}, err
	}
	deps, err := s.eng.DeployAll(ctx, procs...)
	if err != nil {
		return DeployResponse{}, err
	}
	return DeployResponse{Deployments: deps}, nil
}

func decodeVars(raw json.RawMessage) (map[string]any, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.UseNumber()
	var vars map[string]any
	if err := dec.Decode(&vars); err != nil {
		return nil, fmt.Errorf("%w: vars must be a JSON object: %v", engine.ErrInvalid, err)
	}
	return vars, nil
}
