package engine

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/jetbpm/jetbpm/engine/checkpoint"
	"github.com/jetbpm/jetbpm/streams"
)

// Routed starts (docs/engine.md §4.1). A node asked to start an instance
// on a partition another node holds asks that node, on its own subject, to
// start it as a direct start of its own; the holder answers once the
// instance exists, as Start would. A start that finds no holder, or one
// that does not answer within routeTimeout, or one that refuses it, is
// stored as a start event, as before routing: the start's id makes the
// two ways one (a stored start of an instance the holder created is read
// again and changes nothing). A holder that is no longer one when the
// request arrives stores the start itself.

const (
	// routeTimeout bounds a routed start: the request, and the holder's
	// work on it.
	routeTimeout = 5 * time.Second
	// maxRouted bounds the routed starts a node works on at once; past it
	// it refuses, and the asking node stores the start.
	maxRouted = 256
)

// The header of a routed start's answer, and its values.
const (
	routeHeader  = "Jetbpm-Route"
	routeDone    = "done"    // the instance exists (created, found, or its start stored)
	routeRefused = "refused" // not taken: the asking node stores the start
	routeFailed  = "failed"  // taken, and failed as a direct start fails; the body says why
)

// routeStart asks the node holding partition p to start env. routed is
// false when no other node took it (no holder known, no answer in time,
// or a refusal): the caller stores the start then.
func (e *Engine) routeStart(ctx context.Context, p int, env checkpoint.Envelope) (routed bool, err error) {
	node, ok := e.keeper.Holder(p)
	if !ok || node == e.keeper.ID() {
		return false, nil
	}
	body, err := e.startBody(env)
	if err != nil {
		return true, err
	}
	rctx, cancel := context.WithTimeout(ctx, routeTimeout)
	defer cancel()
	reply, err := e.nc.RequestWithContext(rctx, streams.RouteStartSubject(node), body)
	if ctx.Err() != nil {
		return true, fmt.Errorf("instance %s: start: %w", env.Instance, ctx.Err())
	}
	if err != nil {
		e.log.Debug("a routed start was not answered; it is stored", "instance", env.Instance, "node", node, "err", err)
		return false, nil
	}
	switch reply.Header.Get(routeHeader) {
	case routeDone:
		e.metrics.routed.Inc()
		return true, nil
	case routeFailed:
		return true, fmt.Errorf("instance %s: start on node %s: %s", env.Instance, node, reply.Data)
	default:
		return false, nil
	}
}

// startBody is env encoded for a direct or a routed start, after the
// checks a stored start makes.
func (e *Engine) startBody(env checkpoint.Envelope) ([]byte, error) {
	body, err := streams.Marshal(env)
	if err != nil {
		return nil, err
	}
	if len(body) > e.opts.MaxCheckpointBytes {
		return nil, fmt.Errorf("%w: request is %d bytes, the limit is %d", ErrTooLarge, len(body), e.opts.MaxCheckpointBytes)
	}
	if err := e.writable(); err != nil {
		return nil, fmt.Errorf("instance %s: %w", env.Instance, err)
	}
	return body, nil
}

// serveRoutedStarts takes the starts other nodes route to this one until
// runCtx ends; then it stops taking them and waits for those it took.
func (e *Engine) serveRoutedStarts(runCtx context.Context) error {
	if e.opts.takesNoRoutes {
		return nil
	}
	var (
		mu       sync.Mutex
		stopped  bool
		handlers sync.WaitGroup
		slots    = make(chan struct{}, maxRouted)
	)
	sub, err := e.nc.Subscribe(streams.RouteStartSubject(e.keeper.ID()), func(m *nats.Msg) {
		mu.Lock()
		if stopped {
			mu.Unlock()
			answerRoute(m, routeRefused, "")
			return
		}
		select {
		case slots <- struct{}{}:
		default:
			mu.Unlock()
			answerRoute(m, routeRefused, "")
			return
		}
		handlers.Add(1)
		mu.Unlock()
		go func() {
			defer func() { <-slots; handlers.Done() }()
			e.takeRoutedStart(m)
		}()
	})
	if err != nil {
		return fmt.Errorf("engine: subscribe to routed starts: %w", err)
	}
	e.done.Go(func() {
		<-runCtx.Done()
		_ = sub.Unsubscribe()
		mu.Lock()
		stopped = true
		mu.Unlock()
		handlers.Wait()
	})
	return nil
}

// takeRoutedStart starts the instance of a routed start as Start would on
// this node, and answers.
func (e *Engine) takeRoutedStart(m *nats.Msg) {
	env, err := checkpoint.DecodeStart(m.Data)
	if err != nil {
		answerRoute(m, routeFailed, err.Error())
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), routeTimeout)
	defer cancel()
	// The asking node found the definition; one that is not here is not
	// started (and a foreign request learns why).
	if _, err := e.defs.Get(ctx, env.Start.ProcessID, env.Start.Version); err != nil {
		answerRoute(m, routeFailed, err.Error())
		return
	}
	if part := e.held(e.partitionOf(env.Instance)); part != nil && !e.opts.QueuedStarts {
		err = e.startDirect(ctx, part, env)
	} else {
		err = e.send(ctx, env, "start:"+env.Instance)
	}
	switch {
	case err == nil:
		answerRoute(m, routeDone, "")
	case errors.Is(err, ErrClosed):
		answerRoute(m, routeRefused, "")
	default:
		answerRoute(m, routeFailed, err.Error())
	}
}

func answerRoute(m *nats.Msg, status, why string) {
	if m.Reply == "" {
		return
	}
	r := nats.NewMsg(m.Reply)
	r.Header.Set(routeHeader, status)
	r.Data = []byte(why)
	_ = m.RespondMsg(r)
}
