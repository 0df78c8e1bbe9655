package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/jetbpm/jetbpm/engine"
	"github.com/jetbpm/jetbpm/engine/api"
	"github.com/jetbpm/jetbpm/engine/form"
	"github.com/jetbpm/jetbpm/engine/instance"
)

const tasksUsage = `usage: jetbpm tasks list [flags]

Lists user tasks: the work a process waits for a person to do.`

const tasksListUsage = `usage: jetbpm tasks list [flags]

Lists open tasks, highest priority then oldest first, as a table: ID, NAME,
PROCESS, ASSIGNEE, CANDIDATES, PRIORITY, DUE and CREATED. --candidate-user
and --group list the unassigned tasks that user or group may claim (with
--include-assigned the assigned ones too); --assignee the tasks a user
holds. --state all adds the completed and canceled tasks still kept. The
engine answers from an index of the tasks, never by reading instances.
--json prints the tasks as a JSON array of task records.`

const taskUsage = `usage: jetbpm task show|form|claim|unclaim|assign|update|complete|error|escalate [flags] ID

Shows or works on one user task. Every change is made by the task's
instance in order, so two people acting at once get one answer each: the
first wins, the second is told why not. On these commands --user names the
person acting on the task; the NATS user is --nats-user (or
JETBPM_NATS_USER).`

const taskShowUsage = `usage: jetbpm task show [flags] ID

Shows a task: its process and node, state, assignee, candidates, dates,
priority, form, its input variables, and the last commands on it.`

const taskFormUsage = `usage: jetbpm task form [flags] ID

Shows the form the task's BPMN file holds (a Zeebe embedded form or a
Camunda 7 generated form): each field's variable, type, label and rules;
--json prints the Camunda Forms (form-js) schema. A form named by a
formId, an HTML formKey or an external reference is not in the file and
is reported not found.`

const taskClaimUsage = `usage: jetbpm task claim --user U [flags] ID

Assigns the task to U. Refused if another user holds it; claiming a task
you hold already is fine. Prints "ID claimed by U".`

const taskUnclaimUsage = `usage: jetbpm task unclaim [flags] ID

Gives the task back: nobody holds it. Prints "ID unclaimed".`

const taskAssignUsage = `usage: jetbpm task assign --user U [flags] ID

Assigns the task to U whoever holds it (an operator's override; --user ""
unassigns). Prints "ID assigned to U".`

const taskUpdateUsage = `usage: jetbpm task update [--due T] [--follow-up T] [--priority N] [flags] ID

Changes the task's due date, follow-up date (RFC 3339 or a date such as
2026-12-01; "" clears it) or priority (0 to 100). Prints "ID updated".`

const taskCompleteUsage = `usage: jetbpm task complete [--vars JSON] [--user U] [flags] ID

Completes the task with --vars as its result (the task's output mappings
apply) and the process goes on. Refused for a task that is completed or
canceled already. Prints "ID completed".
  jetbpm task complete ID --user alice --vars '{"approved": true}'`

const taskErrorUsage = `usage: jetbpm task error --code C [--message M] [--vars JSON] [--user U] [flags] ID

Ends the task with BPMN error C: an error boundary event on the task (or
around it) catches it; uncaught, it is an incident. Prints "ID error C".`

const taskEscalateUsage = `usage: jetbpm task escalate --code C [--vars JSON] [--user U] [flags] ID

Raises escalation C from the task, after setting --vars: an escalation
boundary event on the task catches it (an interrupting one cancels the
task, a non-interrupting one leaves it open), else an escalation event
sub-process or boundary around it. Refused when nothing catches it.
Prints "ID escalated C".`

func runTasks(ctx context.Context, args []string) error { return runGroup(ctx, "tasks", args) }

func runTask(ctx context.Context, args []string) error { return runGroup(ctx, "task", args) }

// taskStates are the values of tasks list --state.
var taskStates = []string{"open", "all", "created", "assigned", "completed", "canceled"}

func runTasksList(ctx context.Context, args []string) error {
	const name = "tasks list"
	fs := newFlagSet(name)
	cf := addClientFlags(fs)
	var req api.TaskListRequest
	fs.StringVar(&req.Assignee, "assignee", "", "only tasks user `U` holds")
	fs.StringVar(&req.CandidateGroup, "group", "", "only tasks group `G` may claim")
	fs.StringVar(&req.CandidateUser, "candidate-user", "", "only tasks user `U` may claim")
	fs.BoolVar(&req.IncludeAssigned, "include-assigned", false, "with --group or --candidate-user: the assigned tasks too")
	fs.StringVar(&req.ProcessID, "process", "", "only tasks of process `ID`")
	fs.StringVar(&req.Instance, "instance", "", "only tasks of instance `ID`")
	state := &choice{value: "open", allowed: taskStates}
	fs.Var(state, "state", "list `STATE` tasks: "+strings.Join(taskStates, ", "))
	fs.StringVar(&req.DueBefore, "due-before", "", "only tasks due before `T` (RFC 3339 or a date)")
	fs.IntVar(&req.Limit, "limit", api.DefaultTaskLimit, "at most `N` tasks (1 to "+strconv.Itoa(api.MaxTaskLimit)+")")
	asJSON := fs.Bool("json", false, "print the tasks as a JSON array")
	rest, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if err := wantArgs(name, rest); err != nil {
		return err
	}
	if req.Limit < 1 || req.Limit > api.MaxTaskLimit {
		return usageErrorf(name, "--limit must be 1 to %d", api.MaxTaskLimit)
	}
	if req.DueBefore != "" {
		if _, err := api.ParseTaskTime(req.DueBefore); err != nil {
			return usageErrorf(name, "--due-before: %v", err)
		}
	}
	req.State = state.value

	c, err := cf.dial(name)
	if err != nil {
		return err
	}
	defer c.Close()
	ctx, cancel := c.withTimeout(ctx)
	defer cancel()
	list, err := c.Tasks(ctx, req)
	if err != nil {
		return c.explain(err)
	}
	return printList(list, *asJSON, "ID\tNAME\tPROCESS\tASSIGNEE\tCANDIDATES\tPRIORITY\tDUE\tCREATED",
		func(t *instance.Task) string {
			return fmt.Sprintf("%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s", t.ID, orDash(truncate(t.Name, 30)), t.ProcessID, orDash(t.Assignee),
				orDash(truncate(candidates(t), 40)), t.Priority, optionalTime(t.DueDate), formatTime(t.CreatedAt))
		})
}

func runTaskShow(ctx context.Context, args []string) error {
	return showOne(ctx, "task show", "task", args, (*apiClient).Task, printTask)
}

func runTaskForm(ctx context.Context, args []string) error {
	return showOne(ctx, "task form", "form's schema", args, (*apiClient).TaskForm, printTaskForm)
}

// printTaskForm writes a form's fields, one a line.
func printTaskForm(w io.Writer, f api.TaskFormResponse) error {
	s, err := form.Parse(f.Schema)
	if err != nil {
		return fmt.Errorf("task %s: %w", f.TaskID, err)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "VARIABLE\tTYPE\tLABEL\tRULES")
	for _, c := range s.Fields() {
		label := firstNonEmpty(c.Label, c.DateLabel)
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", c.Key, c.Type, orDash(label), orDash(formRules(c)))
	}
	return tw.Flush()
}

// formRules describes a field's validation and options.
func formRules(c *form.Component) string {
	var rules []string
	if v := c.Validate; v != nil {
		if v.Required {
			rules = append(rules, "required")
		}
		for _, b := range []struct {
			name string
			v    *float64
		}{{"min", v.Min}, {"max", v.Max}, {"minLength", v.MinLength}, {"maxLength", v.MaxLength}} {
			if b.v != nil {
				rules = append(rules, fmt.Sprintf("%s %v", b.name, *b.v))
			}
		}
		if v.Pattern != "" {
			rules = append(rules, "pattern "+v.Pattern)
		}
	}
	if c.Readonly {
		rules = append(rules, "readonly")
	}
	if len(c.Values) > 0 {
		var opts []string
		for _, o := range c.Values {
			opts = append(opts, fmt.Sprint(o.Value))
		}
		rules = append(rules, "one of "+strings.Join(opts, ", "))
	}
	if c.DefaultValue != nil {
		rules = append(rules, fmt.Sprintf("default %v", c.DefaultValue))
	}
	return strings.Join(rules, "; ")
}

// printTask writes the human view of a task.
func printTask(w io.Writer, t *instance.Task) error {
	tw := tabwriter.NewWriter(w, 0, 0, 1, ' ', 0)
	fmt.Fprintf(tw, "id:\t%s\n", t.ID)
	if t.Name != "" {
		fmt.Fprintf(tw, "name:\t%s\n", t.Name)
	}
	fmt.Fprintf(tw, "instance:\t%s (%s@%d, node %s)\n", t.Instance, t.ProcessID, t.Version, t.Node)
	fmt.Fprintf(tw, "state:\t%s\n", t.State)
	fmt.Fprintf(tw, "assignee:\t%s\n", orDash(t.Assignee))
	fmt.Fprintf(tw, "candidates:\t%s\n", orDash(candidates(t)))
	fmt.Fprintf(tw, "priority:\t%d\n", t.Priority)
	fmt.Fprintf(tw, "due:\t%s\n", optionalTime(t.DueDate))
	fmt.Fprintf(tw, "follow-up:\t%s\n", optionalTime(t.FollowUpDate))
	switch form := firstNonEmpty(t.FormKey, t.FormID, t.ExternalReference); {
	case t.FormEmbedded && form != "":
		fmt.Fprintf(tw, "form:\t%s (in the BPMN file: jetbpm task form %s)\n", form, t.ID)
	case t.FormEmbedded:
		fmt.Fprintf(tw, "form:\tin the BPMN file (jetbpm task form %s)\n", t.ID)
	case form != "":
		fmt.Fprintf(tw, "form:\t%s\n", form)
	}
	fmt.Fprintf(tw, "created:\t%s\n", formatTime(t.CreatedAt))
	if !t.EndedAt.IsZero() {
		fmt.Fprintf(tw, "ended:\t%s\n", formatTime(t.EndedAt))
	}
	if t.State.Finished() {
		fmt.Fprintf(tw, "outcome:\t%s\n", t.EndedReason())
	}
	for _, o := range t.Outcomes {
		result := "ok"
		if !o.OK {
			result = "refused: " + o.Reason
		}
		fmt.Fprintf(tw, "command:\t%s by %s: %s\n", o.Op, orDash(o.User), result)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	vars, err := json.MarshalIndent(t.Variables, "  ", "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "variables:\n  %s\n", vars)
	return err
}

func candidates(t *instance.Task) string {
	var parts []string
	for _, u := range t.CandidateUsers {
		parts = append(parts, "user:"+u)
	}
	for _, g := range t.CandidateGroups {
		parts = append(parts, "group:"+g)
	}
	return strings.Join(parts, ", ")
}

func optionalTime(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return formatTime(t)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func firstNonEmpty(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}

// taskAction is one of the task commands that change a task.
type taskAction struct {
	name string
	// flags adds the command's own flags and returns prepare, which runs
	// after parsing: it checks them (a usage error, before connecting)
	// and returns the call to make.
	flags func(fs *flag.FlagSet) (prepare func() (taskCall, error))
}

// taskCall changes task id and says what it did ("claimed by alice").
type taskCall func(c *apiClient, ctx context.Context, id string) (t *instance.Task, done string, err error)

func runTaskClaim(ctx context.Context, args []string) error {
	const name = "task claim"
	return runTaskAction(ctx, args, taskAction{name: name, flags: func(fs *flag.FlagSet) func() (taskCall, error) {
		user := fs.String("user", "", "the `USER` who claims the task (required)")
		return func() (taskCall, error) {
			if *user == "" {
				return nil, usageErrorf(name, "--user is required")
			}
			return func(c *apiClient, ctx context.Context, id string) (*instance.Task, string, error) {
				t, err := c.ClaimTask(ctx, id, *user)
				return t, "claimed by " + *user, err
			}, nil
		}
	}})
}

func runTaskUnclaim(ctx context.Context, args []string) error {
	return runTaskAction(ctx, args, taskAction{name: "task unclaim", flags: func(fs *flag.FlagSet) func() (taskCall, error) {
		user := fs.String("user", "", "the `USER` who gives the task back (recorded)")
		return func() (taskCall, error) {
			return func(c *apiClient, ctx context.Context, id string) (*instance.Task, string, error) {
				t, err := c.UnclaimTask(ctx, id, *user)
				return t, "unclaimed", err
			}, nil
		}
	}})
}

func runTaskAssign(ctx context.Context, args []string) error {
	const name = "task assign"
	return runTaskAction(ctx, args, taskAction{name: name, flags: func(fs *flag.FlagSet) func() (taskCall, error) {
		user := &optionalString{}
		fs.Var(user, "user", "assign the task to `USER` (\"\" unassigns; required)")
		return func() (taskCall, error) {
			if !user.set {
				return nil, usageErrorf(name, "--user is required (\"\" unassigns)")
			}
			done := "assigned to " + user.value
			if user.value == "" {
				done = "unassigned"
			}
			return func(c *apiClient, ctx context.Context, id string) (*instance.Task, string, error) {
				t, err := c.AssignTask(ctx, id, user.value)
				return t, done, err
			}, nil
		}
	}})
}

func runTaskUpdate(ctx context.Context, args []string) error {
	const name = "task update"
	return runTaskAction(ctx, args, taskAction{name: name, flags: func(fs *flag.FlagSet) func() (taskCall, error) {
		due, followUp := &optionalString{}, &optionalString{}
		fs.Var(due, "due", "the due date `T` (RFC 3339 or a date; \"\" clears it)")
		fs.Var(followUp, "follow-up", "the follow-up date `T` (RFC 3339 or a date; \"\" clears it)")
		priority := fs.Int("priority", -1, "the priority `N`, 0 to 100")
		user := fs.String("user", "", "the `USER` who changes it (recorded)")
		return func() (taskCall, error) {
			u := engine.TaskUpdate{User: *user}
			var err error
			if u.DueDate, err = taskTime(name, "--due", due); err != nil {
				return nil, err
			}
			if u.FollowUpDate, err = taskTime(name, "--follow-up", followUp); err != nil {
				return nil, err
			}
			switch {
			case *priority == -1:
			case *priority < 0 || *priority > 100:
				return nil, usageErrorf(name, "--priority must be 0 to 100")
			default:
				u.Priority = priority
			}
			if u.DueDate == nil && u.FollowUpDate == nil && u.Priority == nil {
				return nil, usageErrorf(name, "nothing to update: give --due, --follow-up or --priority")
			}
			return func(c *apiClient, ctx context.Context, id string) (*instance.Task, string, error) {
				t, err := c.UpdateTask(ctx, id, u)
				return t, "updated", err
			}, nil
		}
	}})
}

// taskTime reads an optional date flag: unset gives nil, "" the zero
// time (clear the date).
func taskTime(name, flagName string, v *optionalString) (*time.Time, error) {
	if !v.set {
		return nil, nil
	}
	if v.value == "" {
		return &time.Time{}, nil
	}
	t, err := api.ParseTaskTime(v.value)
	if err != nil {
		return nil, usageErrorf(name, "%s: %v", flagName, err)
	}
	return &t, nil
}

func runTaskComplete(ctx context.Context, args []string) error {
	const name = "task complete"
	return runTaskAction(ctx, args, taskAction{name: name, flags: func(fs *flag.FlagSet) func() (taskCall, error) {
		user := fs.String("user", "", "the `USER` who completes it (recorded)")
		vars := fs.String("vars", "", "the task's result, a JSON `OBJECT`")
		return func() (taskCall, error) {
			raw, err := optionalObject(name, *vars)
			if err != nil {
				return nil, err
			}
			return func(c *apiClient, ctx context.Context, id string) (*instance.Task, string, error) {
				t, err := c.CompleteTask(ctx, id, *user, raw)
				return t, "completed", err
			}, nil
		}
	}})
}

func runTaskError(ctx context.Context, args []string) error {
	const name = "task error"
	return runTaskAction(ctx, args, taskAction{name: name, flags: func(fs *flag.FlagSet) func() (taskCall, error) {
		user := fs.String("user", "", "the `USER` who ends it (recorded)")
		code := fs.String("code", "", "the BPMN error `CODE` (required)")
		message := fs.String("message", "", "the error's `MESSAGE`")
		vars := fs.String("vars", "", "variables to set first, a JSON `OBJECT`")
		return func() (taskCall, error) {
			if *code == "" {
				return nil, usageErrorf(name, "--code is required")
			}
			raw, err := optionalObject(name, *vars)
			if err != nil {
				return nil, err
			}
			return func(c *apiClient, ctx context.Context, id string) (*instance.Task, string, error) {
				t, err := c.TaskError(ctx, id, *user, *code, *message, raw)
				return t, "error " + *code, err
			}, nil
		}
	}})
}

func runTaskEscalate(ctx context.Context, args []string) error {
	const name = "task escalate"
	return runTaskAction(ctx, args, taskAction{name: name, flags: func(fs *flag.FlagSet) func() (taskCall, error) {
		user := fs.String("user", "", "the `USER` who escalates it (recorded)")
		code := fs.String("code", "", "the escalation `CODE` (required)")
		vars := fs.String("vars", "", "variables to set first, a JSON `OBJECT`")
		return func() (taskCall, error) {
			if *code == "" {
				return nil, usageErrorf(name, "--code is required")
			}
			raw, err := optionalObject(name, *vars)
			if err != nil {
				return nil, err
			}
			return func(c *apiClient, ctx context.Context, id string) (*instance.Task, string, error) {
				t, err := c.EscalateTask(ctx, id, *user, *code, raw)
				return t, "escalated " + *code, err
			}, nil
		}
	}})
}

func optionalObject(name, s string) (json.RawMessage, error) {
	if s == "" {
		return nil, nil
	}
	raw, err := jsonObject(s)
	if err != nil {
		return nil, usageErrorf(name, "--vars: %v", err)
	}
	return raw, nil
}

func runTaskAction(ctx context.Context, args []string, a taskAction) error {
	fs := newFlagSet(a.name)
	prepare := a.flags(fs) // first: its --user is the task's user, not NATS's
	cf := addClientFlags(fs)
	asJSON := fs.Bool("json", false, "print the task as JSON afterwards")
	rest, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if err := wantArgs(a.name, rest, "ID"); err != nil {
		return err
	}
	call, err := prepare()
	if err != nil {
		return err
	}
	c, err := cf.dial(a.name)
	if err != nil {
		return err
	}
	defer c.Close()
	ctx, cancel := c.withTimeout(ctx)
	defer cancel()
	t, done, err := call(c, ctx, rest[0])
	if err != nil {
		return c.explain(err)
	}
	if *asJSON {
		return printJSON(t)
	}
	fmt.Printf("%s %s\n", rest[0], done)
	return nil
}

// optionalString is a string flag that knows whether it was given, so
// --user "" can mean "nobody".
type optionalString struct {
	value string
	set   bool
}

func (o *optionalString) String() string { return o.value }

func (o *optionalString) Set(s string) error {
	o.value, o.set = s, true
	return nil
}
