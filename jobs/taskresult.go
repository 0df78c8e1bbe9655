package jobs

import (
	"errors"
	"fmt"
	"time"
)

// TaskResult is what the job of a Zeebe task listener may complete with
// (Camunda 8.8's job result of type userTask): deny the user task's
// transition the listener hears (assigning, updating, completing), with a
// reason the command's caller gets; or correct the task as the transition
// takes effect. A listener job completed without one accepts the
// transition as it is.
type TaskResult struct {
	Denied       bool             `json:"denied,omitempty" msgpack:"denied,omitempty"`
	DeniedReason string           `json:"deniedReason,omitempty" msgpack:"deniedReason,omitempty"`
	Corrections  *TaskCorrections `json:"corrections,omitempty" msgpack:"corrections,omitempty"`
}

// TaskCorrections are the task's properties a task listener sets; nil
// leaves one as it is, an empty list clears a list.
type TaskCorrections struct {
	Assignee        *string    `json:"assignee,omitempty" msgpack:"assignee,omitempty"`
	DueDate         *time.Time `json:"dueDate,omitempty" msgpack:"dueDate,omitempty"`
	FollowUpDate    *time.Time `json:"followUpDate,omitempty" msgpack:"followUpDate,omitempty"`
	CandidateUsers  *[]string  `json:"candidateUsers,omitempty" msgpack:"candidateUsers,omitempty"`
	CandidateGroups *[]string  `json:"candidateGroups,omitempty" msgpack:"candidateGroups,omitempty"`
	Priority        *int       `json:"priority,omitempty" msgpack:"priority,omitempty"`
}

// maxCandidates bounds a corrected candidate list.
const maxCandidates = 1000

// Validate names the first problem of a result.
func (r *TaskResult) Validate() error {
	if r == nil {
		return nil
	}
	if r.Denied && r.Corrections != nil {
		return errors.New("a denied task result has no corrections")
	}
	if !r.Denied && r.DeniedReason != "" {
		return errors.New("a task result with a deniedReason is not denied")
	}
	c := r.Corrections
	if c == nil {
		return nil
	}
	if c.Priority != nil && (*c.Priority < 0 || *c.Priority > 100) {
		return fmt.Errorf("corrected priority %d is not from 0 to 100", *c.Priority)
	}
	for name, list := range map[string]*[]string{"candidateUsers": c.CandidateUsers, "candidateGroups": c.CandidateGroups} {
		if list == nil {
			continue
		}
		if len(*list) > maxCandidates {
			return fmt.Errorf("corrected %s has %d entries, at most %d", name, len(*list), maxCandidates)
		}
		for _, s := range *list {
			if s == "" {
				return fmt.Errorf("corrected %s holds an empty name", name)
			}
		}
	}
	return nil
}
