package partition

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetbpm/jetbpm/engine/checkpoint"
	"github.com/jetbpm/jetbpm/engine/instance"
	"github.com/jetbpm/jetbpm/jobs"
	"github.com/jetbpm/jetbpm/streams"
)

// report is a worker message taken from the reports stream.
type report struct {
	msg      jetstream.Msg
	r        jobs.Report
	delivery jobs.Delivery
	// topic and instance are the tokens of the message's subject
	// (streams.ReportSubject). The topic must be the job's: a worker whose
	// credentials allow the reports of its topics only cannot then speak
	// for a job of another topic by naming it in the body.
	topic, instance string
}

// jobAction is an action on a job message and the verdict for the worker,
// carried out once the decision is durable.
type jobAction struct {
	delivery string
	action   jobs.Action
	delay    time.Duration
	replyTo  string
	verdict  jobs.Verdict
}

// parseReport decodes a worker message whose subject ends in subjectRest,
// what follows the partition's streams.ReportPrefix: "<topic>.<instance>".
// A malformed one gets a refusal.
func parseReport(m jetstream.Msg, subjectRest string) (*report, *jobAction) {
	rep, refusal := decodeReport(m.Data())
	if refusal != nil {
		return nil, refusal
	}
	topic, id, _ := strings.Cut(subjectRest, ".")
	if topic == "" || !checkpoint.ValidID(id) {
		return nil, &jobAction{replyTo: rep.r.ReplyTo, verdict: jobs.Verdict{JobID: rep.r.JobID, Kind: rep.r.Kind,
			Reason: "report subject names no valid topic and instance: want the job's reportTo"}}
	}
	rep.msg, rep.topic, rep.instance = m, topic, id
	return rep, nil
}

// decodeReport decodes and checks a report's body. Worker input is
// untrusted: anything malformed is a refusal, never a panic.
func decodeReport(data []byte) (*report, *jobAction) {
	var r jobs.Report
	// As a json.Decoder with UseNumber reads it: an integer a worker sends
	// stays an integer.
	if err := jobs.DecodeReport(data, &r); err != nil {
		// Answer if the report says where, even when another field is off.
		var loose struct {
			ReplyTo string `json:"replyTo"`
			JobID   string `json:"jobId"`
		}
		_ = json.Unmarshal(data, &loose)
		return nil, &jobAction{replyTo: loose.ReplyTo, verdict: jobs.Verdict{JobID: loose.JobID, Reason: "malformed report: " + err.Error()}}
	}
	err := r.Validate()
	if err == nil {
		err = normalizeReport(&r)
	}
	if err != nil {
		return nil, &jobAction{replyTo: r.ReplyTo, verdict: jobs.Verdict{JobID: r.JobID, Kind: r.Kind, Reason: err.Error()}}
	}
	d, err := jobs.ParseDelivery(r.Delivery)
	if err != nil || d.Stream != streams.JobsStream {
		if err == nil {
			err = fmt.Errorf("delivery %q is not from stream %s", r.Delivery, streams.JobsStream)
		}
		return nil, &jobAction{replyTo: r.ReplyTo, verdict: jobs.Verdict{JobID: r.JobID, Kind: r.Kind, Reason: err.Error()}}
	}
	return &report{r: r, delivery: d}, nil
}

// decideReports runs every report of a group through jobs.Decide before
// the step: only terminal outcomes become events for the instance
// (the waiting token parks once and wakes once). It returns those events and whether job bookkeeping changed.
func (p *Partition) decideReports(ctx context.Context, g *group, s *instance.State) (events []instance.Event, changed bool) {
	for _, rep := range g.reports {
		r, d := &rep.r, rep.delivery
		act := jobAction{delivery: r.Delivery, replyTo: r.ReplyTo, verdict: jobs.Verdict{JobID: r.JobID, Kind: r.Kind}}
		var st *jobs.State
		if s != nil && !s.Status.Finished() {
			st = s.Job(r.JobID)
		}
		switch {
		case st == nil:
			act.verdict.Reason = "unknown or finished job"
			real := p.cfg.Queue.IsJobMessage(ctx, d.Seq, r.JobID, g.id, rep.topic)
			if real && s == nil && p.cfg.LostJob != nil && p.cfg.LostJob(ctx, g.id, d.Seq) {
				// The job is real, its instance is not there: the store
				// lost it. The job is the evidence: kept back, not run.
				act.verdict.Reason = fmt.Sprintf("instance %s is lost (its checkpoint is gone): the job is kept back with its damage record (jetbpm store check)", g.id)
				act.action, act.delay = jobs.Nak, KeepBack
				break
			}
			p.log.Info("job report refused", "instance", g.id, "job", r.JobID, "kind", r.Kind, "reason", act.verdict.Reason)
			if real {
				act.action = jobs.Term // its ack was lost, or its task was cancelled
			}
		case rep.topic != streams.Token(st.Topic):
			act.verdict.Reason = fmt.Sprintf("report subject names topic %q, not the topic of job %s", rep.topic, r.JobID)
			p.log.Warn("job report refused", "instance", g.id, "job", r.JobID, "kind", r.Kind, "subject", rep.msg.Subject(), "reason", act.verdict.Reason)
		case d.Consumer != streams.TopicConsumer(st.Topic) || !p.cfg.Queue.SeqMatches(ctx, st, d.Seq):
			act.verdict.Reason = fmt.Sprintf("delivery %s is not a delivery of job %s", r.Delivery, r.JobID)
		default:
			before := st.Delivery
			dec := jobs.Decide(st, r, d, jobs.Env{Now: p.cfg.Now(), Mapper: p.cfg.mapper, Retry: p.cfg.retryPolicy})
			p.cfg.Metrics.countDecision(st.Topic, r, before, dec, st)
			act.verdict, act.action, act.delay = dec.Verdict, dec.Action, dec.Delay
			changed = changed || dec.Changed
			if dec.Terminal != nil {
				events = append(events, instance.Event{
					ID: "job:" + r.JobID + ":" + string(dec.Terminal.Kind), Kind: instance.JobOutcome, Wait: r.JobID, Outcome: dec.Terminal,
				})
				changed = true
			}
			p.logDecision(s.ID, r, d, dec)
		}
		g.actions = append(g.actions, act)
	}
	return events, changed
}

// logDecision writes one record per decided worker message:
// debug for the routine, info for retries and terminal outcomes, warn for
// refusals and exhaustion.
func (p *Partition) logDecision(instanceID string, r *jobs.Report, d jobs.Delivery, dec jobs.Decision) {
	attrs := []any{"instance", instanceID, "job", r.JobID, "kind", r.Kind, "delivery", d.Count, "worker", r.Worker, "accepted", dec.Verdict.Accepted}
	if dec.Verdict.Reason != "" {
		attrs = append(attrs, "reason", dec.Verdict.Reason)
	}
	msg, level := "job report", slog.LevelDebug
	switch {
	case dec.Terminal != nil && dec.Terminal.Cause == jobs.CauseExhausted:
		msg, level = "job retries exhausted", slog.LevelWarn
	case dec.Terminal != nil:
		msg = "job outcome"
		attrs = append(attrs, "outcome", dec.Terminal.Kind)
	case dec.Action == jobs.Nak && r.Kind == jobs.Release:
		msg = "job released"
	case dec.Action == jobs.Nak:
		msg, level = "job retry scheduled", slog.LevelInfo
		attrs = append(attrs, "backoff", dec.Delay)
	case !dec.Verdict.Accepted:
		msg, level = "job report refused", slog.LevelWarn
	}
	p.log.Log(context.Background(), level, msg, attrs...)
}

// sendJobActions acks, naks, terminates or extends job messages on the
// workers' behalf (workers never ack) and answers the workers. It runs after the
// checkpoint that made the decisions durable; a lost action heals itself
// (see docs/jobs.md §3).
func (p *Partition) sendJobActions(g *group) {
	for _, a := range g.actions {
		var body string
		switch a.action {
		case jobs.Ack:
			body = "+ACK"
		case jobs.Nak:
			body = fmt.Sprintf(`-NAK {"delay": %d}`, a.delay.Nanoseconds())
		case jobs.Term:
			body = "+TERM " + strings.ReplaceAll(a.verdict.Reason, "\n", " ")
		case jobs.Progress:
			body = "+WPI"
		}
		if a.action == jobs.Ack || a.action == jobs.Term {
			p.cfg.Queue.Forget(a.verdict.JobID)
		}
		if body != "" && a.delivery != "" {
			if err := p.cfg.NC.Publish(a.delivery, []byte(body)); err != nil {
				p.log.Warn("job action not sent", "job", a.verdict.JobID, "err", err)
			}
		}
		if streams.ValidInbox(a.replyTo) {
			if b, err := jobs.AppendVerdict(make([]byte, 0, 128), &a.verdict); err == nil {
				_ = p.cfg.NC.Publish(a.replyTo, b)
			} else {
				p.log.Warn("verdict not sent", "job", a.verdict.JobID, "err", err)
			}
		} else if a.replyTo != "" {
			p.log.Warn("verdict not sent: replyTo is not an inbox", "job", a.verdict.JobID, "reply_to", a.replyTo)
		}
	}
	g.actions = nil
}

// normalizeReport turns the JSON values of a report into the values a
// checkpoint stores (json.Number into int64 or float64).
func normalizeReport(r *jobs.Report) error {
	var err error
	if r.Output, err = normalizeMap(r.Output); err != nil {
		return fmt.Errorf("output: %w", err)
	}
	if r.Vars, err = normalizeMap(r.Vars); err != nil {
		return fmt.Errorf("vars: %w", err)
	}
	if r.Body, err = instance.Normalize(r.Body); err != nil {
		return fmt.Errorf("body: %w", err)
	}
	return nil
}

func normalizeMap(m map[string]any) (map[string]any, error) {
	if m == nil {
		return nil, nil
	}
	return instance.NormalizeVars(m)
}
