package camunda8

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jetbpm/jetbpm/engine"
	"github.com/jetbpm/jetbpm/engine/lease"
	"github.com/jetbpm/jetbpm/jobs"
	"github.com/jetbpm/jetbpm/streams"
)

// Jobs is what both Camunda 8 doors do with jobs (docs/camunda8-migration.md
// §2–§4): it lends JetStream deliveries to Camunda 8 workers
// (engine/lease), names each by a job key (JobKey: the delivery, so a
// report after the lock moved on is refused, as the engine fences NATS
// reports), holds each lock until the activation's timeout, and sends the
// workers' reports. Errors wrap ErrJobNotFound, ErrReportRefused or
// engine.ErrTooLarge; a door maps them to its own terms.
type Jobs struct {
	eng    *engine.Engine
	ids    *IDs
	lender *lease.Lender
	now    func() time.Time
	log    *slog.Logger

	mu   sync.Mutex
	held map[Key]*held // the deliveries this node lent, by job key
}

// Job errors.
var (
	// ErrJobNotFound: the key names no activation the engine knows as
	// current (unknown, done, or its lock moved on).
	ErrJobNotFound = errors.New("no such job")
	// ErrReportRefused: the engine refused the report (its verdict says
	// why).
	ErrReportRefused = errors.New("report refused")
)

// NewJobs returns the job handling of a door over eng, with keys from ids
// and deliveries lent by l. now is the clock of deadlines (nil:
// time.Now).
func NewJobs(eng *engine.Engine, ids *IDs, l *lease.Lender, now func() time.Time, log *slog.Logger) *Jobs {
	if now == nil {
		now = time.Now
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Jobs{eng: eng, ids: ids, lender: l, now: now, log: log, held: map[Key]*held{}}
}

// An Activation asks for up to Max jobs of Type for Worker, locked until
// Timeout from now, waiting up to Wait for the first.
type Activation struct {
	Type, Worker   string
	Timeout, Wait  time.Duration
	Max            int
	FetchVariables []string // none: all of the job's input
}

// An ActivatedJob is a job lent to a Camunda 8 worker.
type ActivatedJob struct {
	Key                Key
	Type               string
	ProcessInstanceKey Key
	BpmnProcessID      string
	Version            int
	DefinitionKey      Key
	ElementID          string
	// ElementInstanceKey is the instance's key: element instances have no
	// keys yet, and SetVariables accepts the instance's.
	ElementInstanceKey Key
	CustomHeaders      map[string]string // never nil
	Worker             string
	Retries            int            // executions left, this one included
	Deadline           time.Time      // when the lock ends, held to the activation's timeout
	Variables          map[string]any // never nil
	// Listener is the event of a Zeebe listener's job (start, end;
	// creating, assigning, updating, completing), "" for an element's.
	Listener string
}

// Kind is the job's kind as Camunda 8 names it: BPMN_ELEMENT,
// EXECUTION_LISTENER or TASK_LISTENER; and ListenerEvent the listener's
// event in capitals (UNSPECIFIED for an element's job).
func (a *ActivatedJob) Kind() (kind, event string) {
	switch a.Listener {
	case "":
		return "BPMN_ELEMENT", "UNSPECIFIED"
	case "start", "end":
		return "EXECUTION_LISTENER", strings.ToUpper(a.Listener)
	}
	return "TASK_LISTENER", strings.ToUpper(a.Listener)
}

// Activate lends up to a.Max jobs. It returns none when ctx ends first.
func (j *Jobs) Activate(ctx context.Context, a Activation) []ActivatedJob {
	got := j.lender.Fetch(ctx, lease.Request{Worker: a.Worker, Max: a.Max, Wait: a.Wait, Topics: []lease.Topic{{Name: a.Type}}})
	out := make([]ActivatedJob, 0, len(got))
	for i := range got {
		job, err := j.activated(ctx, &got[i], a)
		if err != nil {
			j.log.Warn("job not handed out", "job", got[i].Job.ID, "err", err)
			go j.lender.Release(got[i].Job, got[i].Subject)
			continue
		}
		out = append(out, job)
	}
	return out
}

func (j *Jobs) activated(ctx context.Context, s *lease.Lease, a Activation) (ActivatedJob, error) {
	job, view := s.Job, s.View
	key, err := JobKey(j.eng.PartitionOf(job.Instance)+1, s.Delivery.Seq, s.Delivery.Count)
	if err != nil {
		return ActivatedJob{}, err
	}
	ik, err := j.ids.InstanceKey(ctx, job.Instance)
	if err != nil {
		return ActivatedJob{}, err
	}
	dk, err := j.ids.DefinitionKey(ctx, view.ProcessID, view.Version)
	if err != nil {
		return ActivatedJob{}, err
	}
	vars, headers := job.Input, job.Headers
	if vars == nil {
		vars = map[string]any{}
	}
	if headers == nil {
		headers = map[string]string{}
	}
	if len(a.FetchVariables) > 0 {
		vars = map[string]any{}
		for _, n := range a.FetchVariables {
			if v, ok := job.Input[n]; ok {
				vars[n] = v
			}
		}
	}
	return ActivatedJob{
		Key: key, Type: job.Topic, ProcessInstanceKey: ik, BpmnProcessID: view.ProcessID, Version: view.Version,
		DefinitionKey: dk, ElementID: job.Node, ElementInstanceKey: ik, CustomHeaders: headers, Worker: a.Worker,
		Retries: s.Retries, Deadline: j.hold(key, s, j.now().Add(a.Timeout)), Variables: vars, Listener: job.Listener,
	}, nil
}

// A held job is a delivery this node lent: its subject (so a report sends
// the exact one), and either the goroutine extending its lock to the
// activation's timeout (stop ends it) or the timer that forgets it when
// its lock ends.
type held struct {
	job     *jobs.Job
	subject string
	stop    chan struct{}
	expiry  *time.Timer
}

// hold remembers a lent delivery and, when the activation's deadline is
// past the lock's end, extends the lock every half lock until the deadline
// or the job's report. It returns the deadline the worker may count on.
func (j *Jobs) hold(key Key, s *lease.Lease, deadline time.Time) time.Time {
	h := &held{job: s.Job, subject: s.Subject, stop: make(chan struct{})}
	lock := time.Duration(s.Job.LockDurationMs) * time.Millisecond
	extend := deadline.After(s.Until) && lock > 0
	j.mu.Lock()
	j.held[key] = h
	if !extend {
		h.expiry = time.AfterFunc(time.Until(s.Until), func() { j.forget(key, h) })
	}
	j.mu.Unlock()
	if !extend {
		return s.Until
	}
	go j.extend(key, h, lock, deadline)
	return deadline
}

// extend keeps h's lock until deadline, asking the engine every half lock.
func (j *Jobs) extend(key Key, h *held, lock time.Duration, deadline time.Time) {
	defer j.forget(key, h)
	tick := time.NewTicker(lock / 2)
	defer tick.Stop()
	for {
		select {
		case <-h.stop:
			return
		case <-tick.C:
		}
		if !j.now().Add(lock / 2).Before(deadline) {
			// The lock now outlasts the deadline, as Zeebe's timeout would.
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), lock/2)
		v, err := j.lender.Report(ctx, h.job, h.subject, jobs.Report{Kind: jobs.Extend, ExtendMs: lock.Milliseconds()})
		cancel()
		if err != nil || !v.Accepted {
			j.log.Info("job lock not extended; it expires", "job", h.job.ID, "reason", v.Reason, "err", err)
			return
		}
	}
}

// forget drops a held delivery, stopping its extension.
func (j *Jobs) forget(key Key, h *held) {
	j.mu.Lock()
	if j.held[key] == h {
		delete(j.held, key)
		h.end()
	}
	j.mu.Unlock()
}

// end stops h's extension or expiry timer; j.mu is held.
func (h *held) end() {
	close(h.stop)
	if h.expiry != nil {
		h.expiry.Stop()
	}
}

// Release gives a delivery lent under key back unrun, in the background.
func (j *Jobs) Release(key Key) {
	j.mu.Lock()
	h := j.held[key]
	j.mu.Unlock()
	if h != nil {
		j.forget(key, h)
		go j.lender.Release(h.job, h.subject)
	}
}

// Close stops extending the locks of lent jobs: they expire, and the jobs
// return to the queue, unless reported first.
func (j *Jobs) Close() {
	j.mu.Lock()
	defer j.mu.Unlock()
	for k, h := range j.held {
		delete(j.held, k)
		h.end()
	}
}

// Report sends r for the delivery job key raw names, after allow approves
// the job's type (a worker credential's topics). The key must name the
// delivery the engine knows as current: an older one's lock has moved on,
// and a newer one was never lent (a door checks redeliveries in before
// lending them).
func (j *Jobs) Report(ctx context.Context, raw int64, r jobs.Report, allow func(topic string) error) error {
	d, err := j.delivery(ctx, raw, allow)
	if err != nil {
		return err
	}
	return j.send(ctx, d.key, d.job, d.subject, r)
}

// UpdateTimeout moves the deadline of the activation job key raw names to
// timeout from now, as Zeebe's job timeout update does: the lock is
// extended at once (the engine refuses past the task's maxLockDuration:
// ErrReportRefused) and then held by this node until the new deadline,
// which it returns. A lock cannot be shortened: a timeout shorter than the
// lock leaves the deadline at the lock's end.
func (j *Jobs) UpdateTimeout(ctx context.Context, raw int64, timeout time.Duration, allow func(topic string) error) (time.Time, error) {
	d, err := j.delivery(ctx, raw, allow)
	if err != nil {
		return time.Time{}, err
	}
	lock := time.Duration(d.job.LockDurationMs) * time.Millisecond
	if err := j.ask(ctx, d.job, d.subject, jobs.Report{Kind: jobs.Extend, ExtendMs: lock.Milliseconds()}); err != nil {
		return time.Time{}, err
	}
	j.mu.Lock()
	if h := j.held[d.key]; h != nil {
		delete(j.held, d.key)
		h.end()
	}
	j.mu.Unlock()
	now := j.now()
	return j.hold(d.key, &lease.Lease{Job: d.job, Subject: d.subject, Until: now.Add(lock)}, now.Add(timeout)), nil
}

// A delivery is the job message and reply subject a job key names.
type delivery struct {
	key     Key
	job     *jobs.Job
	subject string
}

// delivery finds the delivery job key raw names — the one this node lent,
// or the job's current delivery rebuilt — after allow approves its type.
func (j *Jobs) delivery(ctx context.Context, raw int64, allow func(topic string) error) (delivery, error) {
	key, err := ParseKey(raw, j.eng.Partitions())
	if err != nil {
		return delivery{}, fmt.Errorf("%w: %w", ErrJobNotFound, err)
	}
	seq, count, err := key.Job()
	if err != nil {
		return delivery{}, fmt.Errorf("%w: %w", ErrJobNotFound, err)
	}
	j.mu.Lock()
	h := j.held[key]
	j.mu.Unlock()
	if h != nil {
		// Lent by this node: the subject is the delivery's own, and the
		// engine fences it.
		if err := allow(h.job.Topic); err != nil {
			return delivery{}, err
		}
		return delivery{key, h.job, h.subject}, nil
	}
	job, err := j.lender.Job(ctx, "", seq)
	if errors.Is(err, lease.ErrGone) {
		return delivery{}, ErrJobNotFound
	}
	if err != nil {
		return delivery{}, err
	}
	if j.eng.PartitionOf(job.Instance)+1 != key.Partition() {
		return delivery{}, ErrJobNotFound
	}
	if err := allow(job.Topic); err != nil {
		return delivery{}, err
	}
	view, err := j.eng.Job(ctx, job.Instance, job.ID)
	if errors.Is(err, engine.ErrNotFound) {
		return delivery{}, ErrJobNotFound
	}
	if err != nil {
		return delivery{}, err
	}
	current := max(view.Job.Delivery, 1)
	if count != min(current, 255) {
		return delivery{}, fmt.Errorf("%w: the key names delivery %d, the job's current delivery is %d", ErrJobNotFound, count, current)
	}
	subject, err := j.subject(ctx, job, seq, current)
	if err != nil {
		return delivery{}, err
	}
	return delivery{key, job, subject}, nil
}

// send sends a report for a job's delivery, maps the engine's verdict
// and, once the report is accepted, forgets the delivery.
func (j *Jobs) send(ctx context.Context, key Key, job *jobs.Job, subject string, r jobs.Report) error {
	if err := j.ask(ctx, job, subject, r); err != nil {
		return err
	}
	j.mu.Lock()
	h := j.held[key]
	j.mu.Unlock()
	if h != nil {
		j.forget(key, h)
	}
	return nil
}

// ask sends a report for a job's delivery and maps the engine's verdict:
// a delivery the engine no longer knows is ErrJobNotFound, another
// refusal ErrReportRefused.
func (j *Jobs) ask(ctx context.Context, job *jobs.Job, subject string, r jobs.Report) error {
	v, err := j.lender.Report(ctx, job, subject, r)
	if err != nil {
		return err
	}
	if !v.Accepted {
		if strings.Contains(v.Reason, "unknown or finished job") || strings.Contains(v.Reason, "stale") || strings.Contains(v.Reason, "already sent back") {
			return fmt.Errorf("%w: %s", ErrJobNotFound, v.Reason)
		}
		return fmt.Errorf("%w: %s", ErrReportRefused, v.Reason)
	}
	return nil
}

// subject rebuilds the ack reply subject of delivery count of the job
// message at seq, for a report through a node that did not lend it. It
// carries the consumer's last delivered sequence where the delivery's own
// would be: the server reads the stream sequence and, for a nak only,
// checks the consumer sequence against the consumer's range, which that
// value satisfies while the message is pending.
func (j *Jobs) subject(ctx context.Context, job *jobs.Job, seq, count uint64) (string, error) {
	cons, err := j.lender.Consumer(ctx, job.Topic)
	if err != nil {
		return "", err
	}
	info, err := cons.Info(ctx)
	if err != nil {
		return "", err
	}
	return "$JS.ACK." + streams.JobsStream + "." + streams.TopicConsumer(job.Topic) + "." + strconv.FormatUint(count, 10) + "." +
		strconv.FormatUint(seq, 10) + "." + strconv.FormatUint(info.Delivered.Consumer, 10) + "." +
		strconv.FormatInt(j.now().UnixNano(), 10) + ".0", nil
}
