package camunda7

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetbpm/jetbpm/engine/lease"
	"github.com/jetbpm/jetbpm/jobs"
	"github.com/jetbpm/jetbpm/streams"
)

// externalTask is Camunda 7's ExternalTaskDto.
type externalTask struct {
	ActivityID           string  `json:"activityId"`
	ActivityInstanceID   string  `json:"activityInstanceId"`
	ErrorMessage         *string `json:"errorMessage"`
	ExecutionID          string  `json:"executionId"`
	ID                   string  `json:"id"`
	LockExpirationTime   *string `json:"lockExpirationTime"`
	CreateTime           *string `json:"createTime"`
	ProcessDefinitionID  string  `json:"processDefinitionId"`
	ProcessDefinitionKey string  `json:"processDefinitionKey"`
	ProcessInstanceID    string  `json:"processInstanceId"`
	Retries              *int    `json:"retries"`
	Suspended            bool    `json:"suspended"`
	WorkerID             *string `json:"workerId"`
	TopicName            string  `json:"topicName"`
	TenantID             *string `json:"tenantId"`
	Priority             int64   `json:"priority"`
	BusinessKey          *string `json:"businessKey"`
}

// unlockedID is the id GET /external-task lists for a job no REST worker
// of this node holds: delivery count 0, which no report can use.
func unlockedID(consumer string, seq uint64) string {
	return fmt.Sprintf("%s.%s.0.%d.0.0.0", streams.JobsStream, consumer, seq)
}

// lookupID finds the job message an id names, unlocked ids included.
func lookupID(id string) (jobs.Delivery, bool) {
	if _, d, err := parseTaskID(id); err == nil {
		return d, true
	}
	t := strings.Split(id, ".")
	if len(t) != 7 || t[0] != streams.JobsStream || t[2] != "0" || !strings.HasPrefix(t[1], "topic-") {
		return jobs.Delivery{}, false
	}
	seq, err := strconv.ParseUint(t[3], 10, 64)
	return jobs.Delivery{Stream: t[0], Consumer: t[1], Seq: seq}, err == nil && seq > 0
}

func (h *Handler) getExternalTask(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	notFound := func() {
		writeError(w, http.StatusNotFound, "InvalidRequestException", fmt.Sprintf("External task with id %s does not exist", id))
	}
	d, ok := lookupID(id)
	if !ok {
		notFound()
		return
	}
	job, err := h.jobOf(r.Context(), d)
	if errors.Is(err, errTaskGone) {
		notFound()
		return
	}
	if err != nil {
		writeEngineError(w, err)
		return
	}
	if !h.authorize(w, r, Access{Operation: OpExternalTaskRead, Topics: []string{job.Topic}}) {
		return
	}
	t, ok := h.describe(r.Context(), job, d.Seq, id)
	if !ok {
		notFound()
		return
	}
	writeJSON(w, http.StatusOK, t)
}

// describe renders a job; ok is false once its instance no longer waits
// for it.
func (h *Handler) describe(ctx context.Context, job *jobs.Job, seq uint64, id string) (*externalTask, bool) {
	view, err := h.eng.Job(ctx, job.Instance, job.ID)
	if err != nil {
		return nil, false
	}
	t := &externalTask{
		ActivityID: job.Node, ActivityInstanceID: job.Node + ":" + job.ID, ExecutionID: job.Instance + ":" + job.Node,
		ID: id, CreateTime: formatDate(job.EnqueuedAt), ProcessDefinitionID: definitionID(view.ProcessID, view.Version),
		ProcessDefinitionKey: job.ProcessID, ProcessInstanceID: job.Instance, TopicName: job.Topic,
	}
	if view.BusinessKey != "" {
		t.BusinessKey = &view.BusinessKey
	}
	if st := view.Job; st.LastError != "" {
		retries := max(st.Budget-int(st.Delivery), 0)
		t.Retries, t.ErrorMessage = &retries, &st.LastError
	}
	h.mu.Lock()
	li, held := h.locks[seq]
	h.mu.Unlock()
	if held && li.until.After(h.opts.Now()) {
		t.LockExpirationTime, t.WorkerID, t.ID = formatDate(li.until), &li.workerID, li.id
	}
	return t, true
}

// maxListed bounds GET /external-task.
const maxListed = 1000

// listExternalTasks lists the queued jobs, oldest first. Filters:
// topicName, processInstanceId, processDefinitionKey, activityId,
// workerId, locked, notLocked; paging with firstResult and maxResults.
// Lock fields are known for the locks this node handed to REST workers.
func (h *Handler) listExternalTasks(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	first, err1 := atoiDefault(q.Get("firstResult"), 0)
	limit, err2 := atoiDefault(q.Get("maxResults"), maxListed)
	if err := errors.Join(err1, err2); err != nil || first < 0 || limit < 0 {
		writeError(w, http.StatusBadRequest, "InvalidRequestException", "firstResult and maxResults must be non-negative integers")
		return
	}
	limit = min(limit, maxListed)
	topic := q.Get("topicName")
	if !h.authorize(w, r, Access{Operation: OpExternalTaskRead, Topics: nonEmpty(topic)}) {
		return
	}
	filter := streams.JobsSubjects
	if topic != "" {
		filter = streams.TopicFilter(topic)
	}
	ctx := r.Context()
	s, err := h.lender.Stream(ctx)
	if err != nil {
		writeEngineError(w, err)
		return
	}
	out := []*externalTask{}
	skipped := 0
	for seq := uint64(1); len(out) < limit; seq++ {
		m, err := s.GetMsg(ctx, seq, jetstream.WithGetMsgSubject(filter))
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			break
		}
		if err != nil {
			writeEngineError(w, err)
			return
		}
		seq = m.Sequence
		job, err := lease.DecodeJob(m.Data)
		if err != nil {
			continue
		}
		if v := q.Get("processInstanceId"); v != "" && job.Instance != v {
			continue
		}
		if v := q.Get("processDefinitionKey"); v != "" && job.ProcessID != v {
			continue
		}
		if v := q.Get("activityId"); v != "" && job.Node != v {
			continue
		}
		t, ok := h.describe(ctx, job, seq, unlockedID(streams.TopicConsumer(job.Topic), seq))
		if !ok {
			continue
		}
		locked := t.WorkerID != nil
		if v := q.Get("workerId"); v != "" && (!locked || *t.WorkerID != v) {
			continue
		}
		if q.Get("locked") == "true" && !locked || q.Get("notLocked") == "true" && locked {
			continue
		}
		if skipped < first {
			skipped++
			continue
		}
		out = append(out, t)
	}
	writeJSON(w, http.StatusOK, out)
}

func atoiDefault(s string, def int) (int, error) {
	if s == "" {
		return def, nil
	}
	return strconv.Atoi(s)
}

func nonEmpty(s string) []string {
	if s == "" {
		return nil
	}
	return []string{s}
}
