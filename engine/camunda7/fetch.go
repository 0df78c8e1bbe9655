package camunda7

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"time"

	"github.com/jetbpm/jetbpm/engine"
	"github.com/jetbpm/jetbpm/engine/lease"
	"github.com/jetbpm/jetbpm/jobs"
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
// req.AsyncResponseTimeout for the first (engine/lease does the fetching,
// the check-ins and the releases).
func (h *Handler) fetchTasks(ctx context.Context, req *fetchRequest, topics []*fetchTopic) []lockedTask {
	lr := lease.Request{Worker: req.WorkerID, Max: req.MaxTasks, Wait: time.Duration(req.AsyncResponseTimeout) * time.Millisecond}
	for _, t := range topics {
		lr.Topics = append(lr.Topics, lease.Topic{Name: t.TopicName, Accept: func(job *jobs.Job, view *engine.JobView) bool { return matches(t, job, view) }})
	}
	got := h.lender.Fetch(ctx, lr)
	tasks := make([]lockedTask, 0, len(got))
	now := h.opts.Now()
	for _, s := range got {
		tasks = append(tasks, h.locked(req.WorkerID, topics[s.Topic], &s, now))
	}
	return tasks
}

// locked records a lease as this node's lock and renders it.
func (h *Handler) locked(worker string, topic *fetchTopic, s *lease.Lease, now time.Time) lockedTask {
	job, view := s.Job, s.View
	id := taskID(s.Subject)
	h.mu.Lock()
	h.locks[s.Delivery.Seq] = lockInfo{id: id, workerID: worker, until: s.Until}
	h.pruneLocks(now)
	h.mu.Unlock()
	t := lockedTask{
		ActivityID: job.Node, ActivityInstanceID: job.Node + ":" + job.ID, ExecutionID: job.Instance + ":" + job.Node,
		ID: id, LockExpirationTime: formatDate(s.Until), CreateTime: formatDate(job.EnqueuedAt),
		ProcessDefinitionID: definitionID(view.ProcessID, view.Version), ProcessDefinitionKey: job.ProcessID,
		ProcessInstanceID: job.Instance, WorkerID: worker, TopicName: job.Topic,
		Variables: encodeVariables(job.Input, topic.Variables), ExtensionProperties: map[string]string{},
	}
	if view.BusinessKey != "" {
		t.BusinessKey = &view.BusinessKey
	}
	if st := view.Job; st.LastError != "" {
		t.Retries, t.ErrorMessage = &s.Retries, &st.LastError
	}
	return t
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
