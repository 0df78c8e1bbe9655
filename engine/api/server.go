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
	"github.com/jetbpm/jetbpm/streams"
)

// maxConcurrent bounds requests one node serves at once; cancel waits for
// the instance to stop, so requests must not run one at a time.
const maxConcurrent = 64

// Server answers API requests for one engine node.
type Server struct {
	h *Handler
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
	s := &Server{h: NewHandler(eng), log: log, maxPayload: nc.MaxPayload(), sem: make(chan struct{}, maxConcurrent), ctx: ctx, stop: stop}
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
		result, err := s.h.Do(ctx, op, m.Data)
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
