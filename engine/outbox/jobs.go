package outbox

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetbpm/jetbpm/engine/instance"
	"github.com/jetbpm/jetbpm/jobs"
	"github.com/jetbpm/jetbpm/streams"
)

// Job message headers, for workers and for the engine's own checks.
const (
	HeaderJob      = "Jetbpm-Job"
	HeaderInstance = "Jetbpm-Instance"
)

// A JobQueue puts jobs on the jobs stream and takes them off, and checks
// that a delivery a worker reports names the job's own message. It
// remembers the stream sequence of each job this node queued, to check
// deliveries without a read, and the topics whose consumer it has seen or
// made.
type JobQueue struct {
	js       jetstream.JetStream
	stream   jetstream.Stream
	replicas int // of a topic's consumer
	log      *slog.Logger

	seqs   sync.Map // job id → stream sequence
	topics sync.Map // topic → true
}

// NewJobQueue returns the queue of the jobs stream; a topic's consumer it
// makes has replicas replicas.
func NewJobQueue(js jetstream.JetStream, stream jetstream.Stream, replicas int, log *slog.Logger) *JobQueue {
	return &JobQueue{js: js, stream: stream, replicas: replicas, log: log}
}

// HandleJobs registers the handlers of job effects with pub. A job is
// queued once its topic's consumer exists; the stream sequence it gets is
// remembered. A cancel purges the job's subject.
func HandleJobs(pub *Publisher, q *JobQueue) {
	pub.Handle(func(ctx context.Context, out *Outbox, eff instance.Effect) error {
		if err := q.ensureTopic(ctx, eff.Job); err != nil {
			return err
		}
		m, err := enqueueMsg(out.partition, out.state, eff)
		if err != nil {
			return err
		}
		id := eff.Job.ID
		return out.Send(m, func(ack *jetstream.PubAck, err error) error {
			if err != nil {
				if alreadyQueued(err) {
					return nil
				}
				return err
			}
			q.seqs.Store(id, ack.Sequence)
			return nil
		})
	}, instance.EnqueueJob)
	pub.Handle(func(ctx context.Context, _ *Outbox, eff instance.Effect) error {
		return q.cancel(ctx, eff.Topic, eff.Wait)
	}, instance.CancelJob)
}

// ensureTopic makes sure the consumer of a job's topic exists before the
// job is queued, once per topic and node: a topic a topic expression gives
// has none until its first job (deploy made the others').
func (q *JobQueue) ensureTopic(ctx context.Context, job *jobs.Job) error {
	if _, ok := q.topics.Load(job.Topic); ok {
		return nil
	}
	lock := time.Duration(job.LockDurationMs) * time.Millisecond
	if err := streams.CreateTopic(ctx, q.js, job.Topic, lock, q.replicas, q.log); err != nil {
		return fmt.Errorf("topic %q: %w", job.Topic, err)
	}
	q.topics.Store(job.Topic, true)
	return nil
}

// enqueueMsg is the message of an EnqueueJob effect. Expected last subject
// sequence 0 makes the publish a no-op when the job is already queued, so
// republishing the outbox never queues a job twice.
func enqueueMsg(partition int, s *instance.State, eff instance.Effect) (*nats.Msg, error) {
	job := *eff.Job
	job.ReportTo = streams.ReportSubject(partition, job.Topic, s.ID)
	body, err := jobs.AppendJob(make([]byte, 0, 512), &job)
	if err != nil {
		return nil, err
	}
	m := nats.NewMsg(streams.JobSubject(job.Topic, job.ID))
	m.Data = body
	m.Header.Set(jetstream.MsgIDHeader, eff.ID)
	m.Header.Set(jetstream.ExpectedLastSubjSeqHeader, "0")
	m.Header.Set(HeaderJob, job.ID)
	m.Header.Set(HeaderInstance, s.ID)
	return m, nil
}

// alreadyQueued reports whether an enqueue failed only because the job is
// already in the queue.
func alreadyQueued(err error) bool { return streams.IsConflict(err) }

// cancel removes a job's message: its task was interrupted or its
// instance ended. A worker holding it is refused when it reports.
func (q *JobQueue) cancel(ctx context.Context, topic, id string) error {
	q.Forget(id)
	err := q.stream.Purge(ctx, jetstream.WithPurgeSubject(streams.JobSubject(topic, id)))
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil
	}
	return err
}

// SeqMatches checks a delivery names the job's own message (stream
// sequence seq), so a forged reply subject cannot make the engine ack
// another job.
func (q *JobQueue) SeqMatches(ctx context.Context, st *jobs.State, seq uint64) bool {
	if st.Seq != 0 {
		return st.Seq == seq
	}
	if known, ok := q.seqs.Load(st.ID); ok {
		return known.(uint64) == seq
	}
	m, err := q.stream.GetLastMsgForSubject(ctx, streams.JobSubject(st.Topic, st.ID))
	return err == nil && m.Sequence == seq
}

// Forget drops the stream sequence remembered for job id: its message is
// acknowledged, terminated or purged.
func (q *JobQueue) Forget(id string) { q.seqs.Delete(id) }

// IsJobMessage reports whether stream sequence seq still holds job id of
// instance instanceID on the topic whose token is topic: a report sent to
// another instance's or another topic's subject must not terminate a job.
func (q *JobQueue) IsJobMessage(ctx context.Context, seq uint64, id, instanceID, topic string) bool {
	m, err := q.stream.GetMsg(ctx, seq)
	return err == nil && m.Header.Get(HeaderJob) == id && m.Header.Get(HeaderInstance) == instanceID &&
		streams.JobTopicToken(m.Subject) == topic
}
