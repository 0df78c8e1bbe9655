package workerkit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetbpm/jetbpm/jobs"
)

// verdicts receives the engine's answers on one wildcard inbox and hands
// each to the report waiting for it.
type verdicts struct {
	prefix string
	sub    *nats.Subscription
	next   atomic.Uint64

	mu      sync.Mutex
	waiting map[string]chan jobs.Verdict
}

func openVerdicts(nc *nats.Conn, log *slog.Logger) (*verdicts, error) {
	v := &verdicts{prefix: nc.NewInbox() + ".", waiting: map[string]chan jobs.Verdict{}}
	sub, err := nc.Subscribe(v.prefix+"*", func(m *nats.Msg) {
		var verdict jobs.Verdict
		if err := json.Unmarshal(m.Data, &verdict); err != nil {
			log.Warn("malformed verdict", "subject", m.Subject, "err", err)
			return
		}
		v.mu.Lock()
		ch := v.waiting[m.Subject]
		v.mu.Unlock()
		if ch != nil {
			select {
			case ch <- verdict:
			default: // a verdict for a republished report is already there
			}
		}
	})
	if err == nil {
		err = nc.Flush() // subscribed before the first report goes out
	}
	if err != nil {
		return nil, fmt.Errorf("workerkit: subscribe to verdicts: %w", err)
	}
	v.sub = sub
	return v, nil
}

func (v *verdicts) close() { _ = v.sub.Unsubscribe() }

// expect registers a reply subject and returns it with its channel and a
// function to unregister it.
func (v *verdicts) expect() (string, chan jobs.Verdict, func()) {
	subject := v.prefix + strconv.FormatUint(v.next.Add(1), 10)
	ch := make(chan jobs.Verdict, 1)
	v.mu.Lock()
	v.waiting[subject] = ch
	v.mu.Unlock()
	return subject, ch, func() {
		v.mu.Lock()
		delete(v.waiting, subject)
		v.mu.Unlock()
	}
}

// errNoVerdict means the engine did not answer a report in time.
var errNoVerdict = errors.New("no verdict from the engine")

// publishes is how often a report is published when no verdict comes.
const publishes = 3

// converse publishes r for the job's delivery and waits for the verdict,
// publishing it again (same message id, so the events stream drops the
// copy if the first one was stored) when none comes within the verdict
// timeout. A non-zero deadline bounds the whole exchange: a check-in or
// extend answered after the lock expired is worthless.
func (x *execution) converse(ctx context.Context, r jobs.Report, msgID string, deadline time.Time) (jobs.Verdict, error) {
	w := x.w
	replyTo, ch, done := w.verdicts.expect()
	defer done()
	r.JobID, r.Delivery, r.Worker, r.ReplyTo = x.raw.ID, x.msg.Reply(), w.opts.Name, replyTo
	body, err := json.Marshal(r)
	if err != nil {
		return jobs.Verdict{}, fmt.Errorf("encode %s report: %w", r.Kind, err)
	}
	msgID = fmt.Sprintf("%s:%d:%s", x.raw.ID, x.delivery, msgID)
	lastErr := errNoVerdict
	for range publishes {
		wait := w.opts.VerdictTimeout
		if !deadline.IsZero() {
			if wait = min(wait, time.Until(deadline)); wait <= 0 {
				break
			}
		}
		m := nats.NewMsg(x.raw.ReportTo)
		m.Data = body
		m.Header.Set(jetstream.MsgIDHeader, msgID)
		pubCtx, cancel := context.WithTimeout(ctx, wait)
		_, err := w.js.PublishMsg(pubCtx, m)
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return jobs.Verdict{}, context.Cause(ctx)
			}
			lastErr = fmt.Errorf("publish %s report: %w", r.Kind, err)
			x.log.Warn("report not published", "kind", r.Kind, "err", err)
			continue
		}
		timer := time.NewTimer(wait)
		select {
		case v := <-ch:
			timer.Stop()
			return v, nil
		case <-ctx.Done():
			timer.Stop()
			return jobs.Verdict{}, context.Cause(ctx)
		case <-timer.C:
			lastErr = errNoVerdict
			x.log.Warn("no verdict yet", "kind", r.Kind, "waited", wait)
		}
	}
	return jobs.Verdict{}, lastErr
}
