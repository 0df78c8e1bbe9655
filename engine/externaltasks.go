package engine

import (
	"context"
	"fmt"

	"github.com/jetbpm/jetbpm/jobs"
)

// JobView is what a front end for external-task workers (the Camunda 7
// REST facade, engine/camunda7) reads about one waiting job besides its
// message: the instance's business key and version, and the job's
// bookkeeping (its attempts budget and the delivery the engine last saw).
type JobView struct {
	Instance    string     `json:"instanceId"`
	ProcessID   string     `json:"processId"`
	Version     int        `json:"version"`
	BusinessKey string     `json:"businessKey,omitempty"`
	Job         jobs.State `json:"job"`
}

// Job reads the job id of instance instanceID. It returns ErrNotFound when
// the instance does not exist, has finished, or no longer waits for the job
// (its task completed or was interrupted).
func (e *Engine) Job(ctx context.Context, instanceID, jobID string) (*JobView, error) {
	s, _, err := e.store.Get(ctx, instanceID)
	if err != nil {
		return nil, err
	}
	st := s.Job(jobID)
	if s.Status.Finished() || st == nil {
		return nil, fmt.Errorf("%w: job %s of instance %s", ErrNotFound, jobID, instanceID)
	}
	return &JobView{Instance: s.ID, ProcessID: s.ProcessID, Version: s.Version, BusinessKey: s.BusinessKey, Job: *st}, nil
}
