package camunda7

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetbpm/jetbpm/engine"
	"github.com/jetbpm/jetbpm/jobs"
	"github.com/jetbpm/jetbpm/streams"
)

// fetchRequest is the body of POST /external-task/fetchAndLock.
type fetchRequest struct {
	WorkerID             string       `json:"workerId"`
	MaxTasks             int          `json:"maxTasks"`
	UsePriority          bool         `json:"usePriority"`
	AsyncResponseTimeout int64        `json:"asyncResponseTimeout"`
	Topics               []fetchTopic `json:"topics"`
}

// fetchTopic is one topic of a fetchAndLock; the tenant and extension
// property fields are accepted and ignored (jetbpm has neither).
type fetchTopic struct {
	TopicName              string         `json:"topicName"`
	LockDuration           int64          `json:"lockDuration"`
	Variables              []string       `json:"variables"`
	LocalVariables         bool           `json:"localVariables"`
	BusinessKey            string         `json:"businessKey"`
	ProcessDefinitionID    string         `json:"processDefinitionId"`
	ProcessDefinitionIDIn  []string       `json:"processDefinitionIdIn"`
	ProcessDefinitionKey   string         `json:"processDefinitionKey"`
	ProcessDefinitionKeyIn []string       `json:"processDefinitionKeyIn"`
	ProcessVariables       map[string]any `json:"processVariables"`
	DeserializeValues      bool           `json:"deserializeValues"`
}

// lockedTask is Camunda 7's LockedExternalTaskDto.
type lockedTask struct {
	ActivityID                  string                 `json:"activityId"`
	ActivityInstanceID          string                 `json:"activityInstanceId"`
	ErrorMessage                *string                `json:"errorMessage"`
	ErrorDetails                *string                `json:"errorDetails"`
	ExecutionID                 string                 `json:"executionId"`
	ID                          string                 `json:"id"`
	LockExpirationTime          *string                `json:"lockExpirationTime"`
	CreateTime                  *string                `json:"createTime"`
	ProcessDefinitionID         string                 `json:"processDefinitionId"`
	ProcessDefinitionKey        string                 `json:"processDefinitionKey"`
	ProcessDefinitionVersionTag *string                `json:"processDefinitionVersionTag"`
	ProcessInstanceID           string                 `json:"processInstanceId"`
	Retries                     *int                   `json:"retries"`
	Suspended                   bool                   `json:"suspended"`
	WorkerID                    string                 `json:"workerId"`
	TopicName                   string                 `json:"topicName"`
	TenantID                    *string                `json:"tenantId"`
	Variables                   map[string]outVariable `json:"variables"`
	Priority                    int64                  `json:"priority"`
	BusinessKey                 *string                `json:"businessKey"`
	ExtensionProperties         map[string]string      `json:"extensionProperties"`
}

// fetched is one job message taken from a topic consumer.
type fetched struct {
	msg   jetstream.Msg
	topic *fetchTopic
}

// fetchAndLock pulls jobs from the topics' JetStream consumers, so a REST
// worker holds a JetStream delivery exactly as a NATS worker does: the
// lock is the consumer's AckWait, a redelivery is checked in with the
// engine before it is handed out, and every report is fenced by the
// delivery its id names. With asyncResponseTimeout it long-polls.
func (h *Handler) fetchAndLock(w http.ResponseWriter, r *http.Request) {
	var req fetchRequest
	if !decodeBody(w, r, &req) {
		return
	}
	if req.WorkerID == "" {
		writeError(w, http.StatusBadRequest, "InvalidRequestException", "workerId is required")
		return
	}
	if req.MaxTasks < 0 || req.AsyncResponseTimeout < 0 {
		writeError(w, http.StatusBadRequest, "InvalidRequestException", "maxTasks and asyncResponseTimeout must not be negative")
		return
	}
	if req.AsyncResponseTimeout > MaxAsyncResponseTimeout.Milliseconds() {
		writeError(w, http.StatusBadRequest, "InvalidRequestException", fmt.Sprintf("asyncResponseTimeout %d ms is above the maximum of %d ms", req.AsyncResponseTimeout, MaxAsyncResponseTimeout.Milliseconds()))
		return
	}
	var topics []*fetchTopic
	var names []string
	for i := range req.Topics {
		t := &req.Topics[i]
		if t.TopicName == "" {
			writeError(w, http.StatusBadRequest, "InvalidRequestException", fmt.Sprintf("topics[%d]: topicName is required", i))
			return
		}
		if !slices.Contains(names, t.TopicName) {
			topics, names = append(topics, t), append(names, t.TopicName)
		}
	}
	if !h.authorize(w, r, Access{Operation: OpFetch, Topics: names}) {
		return
	}
	tasks := h.fetchTasks(r.Context(), &req, topics)
	if tasks == nil {
		tasks = []lockedTask{}
	}
	writeJSON(w, http.StatusOK, tasks)
}

// fetchTasks returns up to req.MaxTasks locked tasks, waiting up to
// req.AsyncResponseTimeout for the first. It never gives up a job the
// server handed out: one the client can no longer receive, or one the
// topic's filters refuse, is released for immediate redelivery.
func (h *Handler) fetchTasks(ctx context.Context, req *fetchRequest, topics []*fetchTopic) []lockedTask {
	if req.MaxTasks == 0 || len(topics) == 0 {
		return nil
	}
	deadline := time.Now().Add(time.Duration(req.AsyncResponseTimeout) * time.Millisecond)
	var tasks []lockedTask
	for {
		var got []fetched
		for _, t := range topics {
			if n := req.MaxTasks - len(tasks) - len(got); n > 0 {
				got = append(got, h.pull(ctx, t, n, 0)...)
			}
		}
		more, rejected := h.lockAll(ctx, req, got)
		tasks = append(tasks, more...)
		wait := time.Until(deadline)
		if len(tasks) > 0 || wait <= 0 {
			break
		}
		if ctx.Err() != nil {
			return nil
		}
		if rejected > 0 {
			// Jobs the filters refused went back to the queue: do not take
			// them again at once.
			select {
			case <-time.After(min(wait, time.Second)):
			case <-ctx.Done():
				return nil
			}
			continue
		}
		// Long poll: one pull per topic waits for its first job.
		slice := min(wait, h.opts.PollSlice)
		var mu sync.Mutex
		var wg sync.WaitGroup
		got = nil
		for _, t := range topics {
			wg.Go(func() {
				f := h.pull(ctx, t, 1, slice)
				mu.Lock()
				got = append(got, f...)
				mu.Unlock()
			})
		}
		wg.Wait()
		more, _ = h.lockAll(ctx, req, got)
		tasks = append(tasks, more...)
		if len(tasks) > 0 {
			// Fill the rest of maxTasks with what is there now.
			continue
		}
	}
	if len(tasks) > req.MaxTasks {
		for _, t := range tasks[req.MaxTasks:] {
			h.release(t.ID)
		}
		tasks = tasks[:req.MaxTasks]
	}
	if ctx.Err() != nil {
		// The client is gone: nobody will work these.
		for _, t := range tasks {
			h.release(t.ID)
		}
		return nil
	}
	return tasks
}

// pull fetches up to n jobs of topic t: what is there now (wait 0), or
// waiting up to wait for them. A topic nobody deployed yet has no
// consumer, hence no jobs.
func (h *Handler) pull(ctx context.Context, t *fetchTopic, n int, wait time.Duration) []fetched {
	cons, err := h.consumer(ctx, t.TopicName)
	if err != nil {
		if !errors.Is(err, jetstream.ErrConsumerNotFound) && !errors.Is(err, jetstream.ErrStreamNotFound) {
			h.log.Warn("cannot look up the topic's consumer", "topic", t.TopicName, "err", err)
		}
		if wait > 0 {
			select {
			case <-time.After(wait):
			case <-ctx.Done():
			}
		}
		return nil
	}
	var batch jetstream.MessageBatch
	if wait == 0 {
		batch, err = cons.FetchNoWait(n)
	} else {
		batch, err = cons.Fetch(n, jetstream.FetchMaxWait(wait))
	}
	if err != nil {
		h.consumers.Delete(t.TopicName)
		h.log.Warn("fetch failed", "topic", t.TopicName, "err", err)
		return nil
	}
	var out []fetched
	for m := range batch.Messages() {
		out = append(out, fetched{msg: m, topic: t})
	}
	if err := batch.Error(); err != nil && !errors.Is(err, jetstream.ErrNoMessages) && !errors.Is(err, nats.ErrTimeout) {
		h.consumers.Delete(t.TopicName)
		h.log.Debug("fetch ended", "topic", t.TopicName, "err", err)
	}
	return out
}

func (h *Handler) consumer(ctx context.Context, topic string) (jetstream.Consumer, error) {
	if c, ok := h.consumers.Load(topic); ok {
		return c.(jetstream.Consumer), nil
	}
	lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	c, err := h.js.Consumer(lctx, streams.JobsStream, streams.TopicConsumer(topic))
	if err != nil {
		return nil, err
	}
	h.consumers.Store(topic, c)
	return c, nil
}

// lockAll turns fetched job messages into locked tasks for req's worker,
// concurrently: a redelivery is checked in first (and dropped when the
// engine refuses it), a job the topic's filters refuse is released. It
// returns the tasks and how many were released as refused.
func (h *Handler) lockAll(ctx context.Context, req *fetchRequest, got []fetched) ([]lockedTask, int) {
	if len(got) == 0 {
		return nil, 0
	}
	results := make([]*lockedTask, len(got))
	rejected := make([]bool, len(got))
	var wg sync.WaitGroup
	for i, f := range got {
		wg.Go(func() { results[i], rejected[i] = h.lock(ctx, req, f) })
	}
	wg.Wait()
	var out []lockedTask
	n := 0
	for i, t := range results {
		if t != nil {
			out = append(out, *t)
		}
		if rejected[i] {
			n++
		}
	}
	return out, n
}

func (h *Handler) lock(ctx context.Context, req *fetchRequest, f fetched) (task *lockedTask, rejected bool) {
	now := h.opts.Now()
	job, err := decodeJob(f.msg.Data())
	if err != nil {
		h.log.Warn("malformed job message; left to expire", "subject", f.msg.Subject(), "err", err)
		return nil, false
	}
	md, err := f.msg.Metadata()
	if err != nil {
		h.log.Warn("job message without metadata; left to expire", "subject", f.msg.Subject(), "err", err)
		return nil, false
	}
	delivery := f.msg.Reply()
	d, err := jobs.ParseDelivery(delivery)
	if err != nil {
		h.log.Warn("job message with an unknown reply subject; left to expire", "reply", delivery, "err", err)
		return nil, false
	}
	id := taskID(delivery)
	if md.NumDelivered > 1 {
		// A redelivery: run it only if the engine says this delivery is
		// current (this also counts the expired ones as attempts).
		v, err := h.converse(context.WithoutCancel(ctx), job, delivery, d, jobs.Report{Kind: jobs.CheckIn, Worker: req.WorkerID})
		if err != nil || !v.Accepted {
			h.log.Info("redelivery not handed out", "job", job.ID, "delivery", md.NumDelivered, "verdict", v.Reason, "err", err)
			return nil, false
		}
	}
	view, err := h.eng.Job(context.WithoutCancel(ctx), job.Instance, job.ID)
	if err != nil {
		// Finished meanwhile: a release lets the engine terminate it.
		if errors.Is(err, engine.ErrNotFound) {
			h.releaseDelivery(job, delivery, d)
		} else {
			h.log.Warn("cannot read the job's instance; job left to expire", "job", job.ID, "err", err)
		}
		return nil, false
	}
	if !matches(f.topic, job, view) {
		h.releaseDelivery(job, delivery, d)
		return nil, true
	}
	until := now.Add(time.Duration(job.LockDurationMs) * time.Millisecond)
	h.mu.Lock()
	h.locks[d.Seq] = lockInfo{id: id, workerID: req.WorkerID, until: until}
	h.pruneLocks(now)
	h.mu.Unlock()

	t := &lockedTask{
		ActivityID: job.Node, ActivityInstanceID: job.Node + ":" + job.ID, ExecutionID: job.Instance + ":" + job.Node,
		ID: id, LockExpirationTime: formatDate(until), CreateTime: formatDate(job.EnqueuedAt),
		ProcessDefinitionID: definitionID(view.ProcessID, view.Version), ProcessDefinitionKey: job.ProcessID,
		ProcessInstanceID: job.Instance, WorkerID: req.WorkerID, TopicName: job.Topic,
		Variables: encodeVariables(job.Input, f.topic.Variables), ExtensionProperties: map[string]string{},
	}
	if view.BusinessKey != "" {
		t.BusinessKey = &view.BusinessKey
	}
	if st := view.Job; st.LastError != "" {
		retries := max(st.Budget-int(md.NumDelivered-1), 0)
		t.Retries, t.ErrorMessage = &retries, &st.LastError
	}
	return t, false
}

// pruneLocks forgets locks long expired; h.mu is held.
func (h *Handler) pruneLocks(now time.Time) {
	if len(h.locks) < 1024 {
		return
	}
	for seq, li := range h.locks {
		if now.Sub(li.until) > time.Hour {
			delete(h.locks, seq)
		}
	}
}

// matches applies a topic's filters to a job.
func matches(t *fetchTopic, job *jobs.Job, view *engine.JobView) bool {
	if t.BusinessKey != "" && view.BusinessKey != t.BusinessKey {
		return false
	}
	if t.ProcessDefinitionKey != "" && job.ProcessID != t.ProcessDefinitionKey {
		return false
	}
	if len(t.ProcessDefinitionKeyIn) > 0 && !slices.Contains(t.ProcessDefinitionKeyIn, job.ProcessID) {
		return false
	}
	def := definitionID(view.ProcessID, view.Version)
	if t.ProcessDefinitionID != "" && def != t.ProcessDefinitionID {
		return false
	}
	if len(t.ProcessDefinitionIDIn) > 0 && !slices.Contains(t.ProcessDefinitionIDIn, def) {
		return false
	}
	for name, want := range t.ProcessVariables {
		got, ok := job.Input[name]
		if !ok || !sameJSON(got, want) {
			return false
		}
	}
	return true
}

// sameJSON compares two values as JSON (1 and 1.0 are equal).
func sameJSON(a, b any) bool {
	ja, err1 := json.Marshal(a)
	jb, err2 := json.Marshal(b)
	if err1 != nil || err2 != nil {
		return false
	}
	var x, y any
	_ = json.Unmarshal(ja, &x)
	_ = json.Unmarshal(jb, &y)
	return reflect.DeepEqual(x, y)
}

// definitionID is the process definition id of a process version, as the
// facade names it: "<processId>:<version>".
func definitionID(processID string, version int) string {
	return processID + ":" + strconv.Itoa(version)
}

// release gives the delivery a task id names back to the queue, in the
// background: its client will never see it.
func (h *Handler) release(id string) {
	delivery, d, err := parseTaskID(id)
	if err != nil {
		return
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), h.opts.VerdictTimeout)
		defer cancel()
		job, err := h.jobOf(ctx, d)
		if err != nil {
			return
		}
		h.releaseDelivery(job, delivery, d)
	}()
}

func (h *Handler) releaseDelivery(job *jobs.Job, delivery string, d jobs.Delivery) {
	h.mu.Lock()
	delete(h.locks, d.Seq)
	h.mu.Unlock()
	v, err := h.converse(context.Background(), job, delivery, d, jobs.Report{Kind: jobs.Release})
	if err != nil || !v.Accepted {
		h.log.Info("job not released; it returns when its lock expires", "job", job.ID, "reason", v.Reason, "err", err)
	}
}
