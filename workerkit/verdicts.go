package workerkit

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetbpm/jetbpm/jobs"
)

// A VerdictInbox receives the engine's verdicts on one wildcard inbox of a
// connection and hands each to the report waiting for it: one subscription,
// however many reports are in flight. Worker uses one; so does anything else
// that reports jobs (the Camunda 7 REST layer).
type VerdictInbox struct {
	prefix string
	token  string
	sub    *nats.Subscription
	next   atomic.Uint64

	mu      sync.Mutex
	waiting map[string]chan jobs.Verdict
}

// OpenVerdictInbox subscribes to a new inbox of nc; a malformed verdict is
// logged to log and dropped.
func OpenVerdictInbox(nc *nats.Conn, log *slog.Logger) (*VerdictInbox, error) {
	inbox := nc.NewInbox()
	v := &VerdictInbox{prefix: inbox + ".", token: inbox[strings.LastIndexByte(inbox, '.')+1:], waiting: map[string]chan jobs.Verdict{}}
	sub, err := nc.Subscribe(v.prefix+"*", func(m *nats.Msg) {
		var verdict jobs.Verdict
		if err := jobs.UnmarshalVerdict(m.Data, &verdict); err != nil {
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

// Close unsubscribes; reports still waiting get no verdict.
func (v *VerdictInbox) Close() { _ = v.sub.Unsubscribe() }

// Token is the inbox's unique token: a report's message id can include it
// to be unique across processes.
func (v *VerdictInbox) Token() string { return v.token }

// Expect registers a new reply subject for a report and returns it, the
// channel its verdict arrives on, and a function that unregisters it.
func (v *VerdictInbox) Expect() (replyTo string, verdict <-chan jobs.Verdict, done func()) {
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

// Pauses after a failed publish (no stream leader, no connection): short
// at first, as during a leader election, then longer.
const (
	minPublishPause = 50 * time.Millisecond
	maxPublishPause = 2 * time.Second
)

// converse publishes r for the job's delivery and waits for the verdict
// until deadline: while the lock holds, an answer is worth having. When a
// publish fails (a stream leader being elected, a node catching up) it
// pauses and publishes again with the same message id, so the stream keeps
// one copy if the first was stored after all. When no verdict comes within
// the verdict timeout it publishes a new copy (a new id): a stored report
// can be stranded when a cluster node dies, and the engine decides a
// delivery once, refusing later copies.
func (x *execution) converse(ctx context.Context, r jobs.Report, msgID string, deadline time.Time) (jobs.Verdict, error) {
	w := x.w
	replyTo, ch, done := w.verdicts.Expect()
	defer done()
	r.JobID, r.Delivery, r.Worker, r.ReplyTo = x.raw.ID, x.msg.Reply(), w.opts.Name, replyTo
	body, err := jobs.AppendReport(make([]byte, 0, 256), &r)
	if err != nil {
		return jobs.Verdict{}, fmt.Errorf("encode %s report: %w", r.Kind, err)
	}
	base := fmt.Sprintf("%s:%d:%s", x.raw.ID, x.delivery, msgID)
	msgID = base
	lastErr := errNoVerdict
	copies := 0
	pause := minPublishPause
	for {
		wait := min(w.opts.VerdictTimeout, time.Until(deadline))
		if wait <= 0 {
			return jobs.Verdict{}, lastErr
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
			x.log.Warn("report not published; trying again", "kind", r.Kind, "err", err, "pause", pause)
			if !sleep(ctx, min(pause, time.Until(deadline))) {
				return jobs.Verdict{}, context.Cause(ctx)
			}
			pause = min(2*pause, maxPublishPause)
			continue
		}
		pause = minPublishPause
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
			copies++
			msgID = fmt.Sprintf("%s:r%d", base, copies)
			x.log.Warn("no verdict yet; publishing a new copy", "kind", r.Kind, "waited", wait)
		}
	}
}

// sleep waits d or until ctx ends, and reports whether it waited d.
func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
