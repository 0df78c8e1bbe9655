package lease

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetbpm/jetbpm/engine"
	"github.com/jetbpm/jetbpm/jobs"
	"github.com/jetbpm/jetbpm/streams"
)

// ErrGone means a job message is no longer queued: the job is done (the
// work-queue stream dropped it), or the sequence holds another topic's.
var ErrGone = errors.New("job gone")

// Job reads the job message at stream sequence seq of topic consumer
// consumer (streams.TopicConsumer; "" is any topic's); ErrGone when there
// is none.
func (l *Lender) Job(ctx context.Context, consumer string, seq uint64) (*jobs.Job, error) {
	s, err := l.Stream(ctx)
	if err != nil {
		return nil, err
	}
	m, err := s.GetMsg(ctx, seq)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil, ErrGone
	}
	if err != nil {
		return nil, err
	}
	token := streams.JobTopicToken(m.Subject) // streams.TopicConsumer is "topic-" + token
	if token == "" || consumer != "" && "topic-"+token != consumer {
		return nil, ErrGone
	}
	job, err := DecodeJob(m.Data)
	if err != nil {
		return nil, fmt.Errorf("job message %d: %w", seq, err)
	}
	return job, nil
}

// DecodeJob decodes a job message's body; integers in its input stay
// integers (json.Number).
func DecodeJob(data []byte) (*jobs.Job, error) {
	var job jobs.Job
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&job); err != nil {
		return nil, err
	}
	return &job, nil
}

// Stream returns the jobs stream.
func (l *Lender) Stream(ctx context.Context) (jetstream.Stream, error) {
	l.mu.Lock()
	s := l.stream
	l.mu.Unlock()
	if s != nil {
		return s, nil
	}
	s, err := l.js.Stream(ctx, streams.JobsStream)
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	l.stream = s
	l.mu.Unlock()
	return s, nil
}

// Report sends r for the delivery subject names to the job's reportTo and
// waits for the engine's verdict. A failed publish is tried again with the
// same message id (the stream keeps one copy) until the verdict timeout.
//
// A door's worker runs no task policy: its completion's output is mapped
// by the engine (the report says it could not run a shipped policy).
func (l *Lender) Report(ctx context.Context, job *jobs.Job, subject string, r jobs.Report) (jobs.Verdict, error) {
	d, err := jobs.ParseDelivery(subject)
	if err != nil {
		return jobs.Verdict{}, err
	}
	replyTo, ch, done := l.verdicts.Expect()
	defer done()
	r.JobID, r.Delivery, r.ReplyTo = job.ID, subject, replyTo
	if r.Kind == jobs.Complete && job.Policy != nil {
		r.CannotRunPolicy = true
	}
	body, err := jobs.AppendReport(make([]byte, 0, 256), &r)
	if err != nil {
		return jobs.Verdict{}, fmt.Errorf("encode %s report: %w", r.Kind, err)
	}
	if max := l.nc.MaxPayload(); int64(len(body)) > max {
		return jobs.Verdict{}, fmt.Errorf("%w: the %s report is %d bytes, over the NATS server's maximum payload of %d", engine.ErrTooLarge, r.Kind, len(body), max)
	}
	ctx, cancel := context.WithTimeout(ctx, l.opts.VerdictTimeout)
	defer cancel()
	m := nats.NewMsg(job.ReportTo)
	m.Data = body
	// One id per report: a client's second request is a new report (the
	// engine refuses it if the first was decided), a publish retried
	// within this one is the same.
	m.Header.Set(jetstream.MsgIDHeader, fmt.Sprintf("%s:%d:%s:%s", job.ID, d.Count, r.Kind, replyTo[strings.LastIndexByte(replyTo, '.')+1:]+"."+l.verdicts.Token()))
	pause := 50 * time.Millisecond
	for {
		_, err := l.js.PublishMsg(ctx, m)
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			return jobs.Verdict{}, fmt.Errorf("publish %s report: %w", r.Kind, err)
		}
		select {
		case <-time.After(pause):
		case <-ctx.Done():
			return jobs.Verdict{}, fmt.Errorf("publish %s report: %w", r.Kind, err)
		}
		pause = min(2*pause, 2*time.Second)
	}
	select {
	case v := <-ch:
		return v, nil
	case <-ctx.Done():
		return jobs.Verdict{}, fmt.Errorf("no verdict from the engine for the %s report: %w", r.Kind, ctx.Err())
	}
}
