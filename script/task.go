package script

import (
	"fmt"
	"math"
	"slices"

	"github.com/dop251/goja"
)

// Task is the user task a task listener's script sees as `task`, with
// Camunda 7's DelegateTask calls: getId, getName, getTaskDefinitionKey,
// getEventName, getProcessInstanceId, getAssignee and setAssignee,
// getPriority and setPriority (0–100), addCandidateUser,
// addCandidateGroup, deleteCandidateUser, deleteCandidateGroup,
// getExecution, and the variable calls of `execution` (the task's
// variables are its execution's). What the script changes is in
// Result.Task.
type Task struct {
	ID, Name, DefinitionKey, EventName string
	Assignee                           string
	Priority                           int
	CandidateUsers, CandidateGroups    []string
}

func (t *Task) clone() *Task {
	c := *t
	c.CandidateUsers, c.CandidateGroups = slices.Clone(t.CandidateUsers), slices.Clone(t.CandidateGroups)
	return &c
}

func (f *facade) bindTask(execution *goja.Object) error {
	tk, o := f.task, f.vm.NewObject()
	add := func(list *[]string) func(string) {
		return func(s string) {
			if !slices.Contains(*list, s) {
				*list = append(*list, s)
			}
		}
	}
	del := func(list *[]string) func(string) {
		return func(s string) { *list = slices.DeleteFunc(*list, func(x string) bool { return x == s }) }
	}
	for name, fn := range map[string]any{
		"getId":                func() string { return tk.ID },
		"getName":              func() string { return tk.Name },
		"getTaskDefinitionKey": func() string { return tk.DefinitionKey },
		"getEventName":         func() string { return tk.EventName },
		"getProcessInstanceId": func() string { return f.env.Execution.ProcessInstanceID },
		"getAssignee": func() goja.Value {
			if tk.Assignee == "" {
				return goja.Null()
			}
			return f.vm.ToValue(tk.Assignee)
		},
		"setAssignee":          f.setAssignee,
		"getPriority":          func() int { return tk.Priority },
		"setPriority":          f.setPriority,
		"addCandidateUser":     add(&tk.CandidateUsers),
		"addCandidateGroup":    add(&tk.CandidateGroups),
		"deleteCandidateUser":  del(&tk.CandidateUsers),
		"deleteCandidateGroup": del(&tk.CandidateGroups),
		"getExecution":         func() *goja.Object { return execution },
		"getVariable":          f.getVariable,
		"getVariableLocal":     f.getVariable,
		"getVariables":         f.getVariables,
		"hasVariable":          f.hasVariable,
		"setVariable":          func(name string, v goja.Value) error { return f.set(name, v, false) },
		"setVariableLocal":     func(name string, v goja.Value) error { return f.set(name, v, true) },
	} {
		if err := o.Set(name, fn); err != nil {
			return err
		}
	}
	return f.vm.Set("task", o)
}

// setAssignee is task.setAssignee(user): a string, or null for nobody.
func (f *facade) setAssignee(v goja.Value) error {
	if goja.IsNull(v) || goja.IsUndefined(v) {
		f.task.Assignee = ""
		return nil
	}
	s, ok := v.Export().(string)
	if !ok {
		return fmt.Errorf("setAssignee: want a user id (a string) or null, got %s", v.String())
	}
	f.task.Assignee = s
	return nil
}

// setPriority is task.setPriority(n): a whole number from 0 to 100.
func (f *facade) setPriority(v goja.Value) error {
	n := v.ToFloat()
	if n != math.Trunc(n) || n < 0 || n > 100 {
		return fmt.Errorf("setPriority: want a whole number from 0 to 100, got %s", v.String())
	}
	f.task.Priority = int(n)
	return nil
}
