package index

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jetbpm/jetbpm/engine/errdefs"
	"github.com/jetbpm/jetbpm/engine/instance"
)

// Task list states (TaskFilter.State) besides the task states themselves.
const (
	TasksOpen = "open" // created or assigned: the default
	TasksAll  = "all"  // open, and finished within the retention
)

// TaskListStates are the values TaskFilter.State takes ("" is TasksOpen).
var TaskListStates = []string{
	TasksOpen, TasksAll,
	string(instance.TaskCreated), string(instance.TaskAssigned), string(instance.TaskCompleted), string(instance.TaskCanceled),
}

// TaskFilter selects tasks for Tasks. Every field set must hold; the zero
// value lists every open task.
type TaskFilter struct {
	// Assignee lists the tasks this user holds.
	Assignee string
	// CandidateUser and CandidateGroup list the tasks this user, or this
	// group, is a candidate for (listed in CandidateUsers or
	// CandidateGroups); with both, a task of either. As Camunda 7's task
	// query does, they list the tasks nobody holds yet — those the user
	// may claim — unless IncludeAssigned.
	CandidateUser   string
	CandidateGroup  string
	IncludeAssigned bool
	// ProcessID and Instance list the tasks of one process or instance.
	ProcessID string
	Instance  string
	// State is TasksOpen ("" too), TasksAll, or one task state (created,
	// assigned, completed, canceled). Finished tasks are listed for the
	// finished-instance retention.
	State string
	// DueBefore lists the tasks with a due date before it.
	DueBefore time.Time
	// Offset skips the first tasks of the list; Limit bounds the tasks
	// returned (0: all).
	Offset, Limit int
}

// Validate returns an error naming what is wrong with f, errdefs.ErrInvalid.
func (f TaskFilter) Validate() error {
	if f.State != "" && !slices.Contains(TaskListStates, f.State) {
		return fmt.Errorf("%w: task state %q: want one of %s", errdefs.ErrInvalid, f.State, strings.Join(TaskListStates, ", "))
	}
	if f.Offset < 0 || f.Limit < 0 {
		return fmt.Errorf("%w: offset %d, limit %d: neither may be negative", errdefs.ErrInvalid, f.Offset, f.Limit)
	}
	return nil
}

// match reports whether e is listed by f.
func (f TaskFilter) match(e *taskEntry) bool {
	switch f.State {
	case "", TasksOpen:
		if e.state.Finished() {
			return false
		}
	case TasksAll:
	default:
		if string(e.state) != f.State {
			return false
		}
	}
	switch {
	case f.Assignee != "" && e.assignee != f.Assignee,
		f.ProcessID != "" && e.process != f.ProcessID,
		f.Instance != "" && e.instance != f.Instance,
		!f.DueBefore.IsZero() && (e.due.IsZero() || !e.due.Before(f.DueBefore)):
		return false
	}
	if f.CandidateUser == "" && f.CandidateGroup == "" {
		return true
	}
	if e.assignee != "" && !f.IncludeAssigned {
		return false
	}
	return f.CandidateUser != "" && slices.Contains(e.users, f.CandidateUser) ||
		f.CandidateGroup != "" && slices.Contains(e.groups, f.CandidateGroup)
}
