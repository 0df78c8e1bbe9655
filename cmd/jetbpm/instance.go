package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/jetbpm/jetbpm/engine"
	"github.com/jetbpm/jetbpm/engine/api"
	"github.com/jetbpm/jetbpm/engine/instance"
)

const instanceUsage = `usage: jetbpm instance show|cancel|compensate|set-vars [flags] ID

Shows, cancels, compensates or sets the variables of one process instance.`

const instanceShowUsage = `usage: jetbpm instance show [flags] ID

Shows an instance: its process and version, status (active, incident,
completed, failed or terminated), when it started and ended, the nodes it
is at, its open incidents, the parallel joins it is stuck at (every token
left waits at a join that can never fire, e.g. after a branch's incident
was abandoned: cancel it), the completed work it can still compensate
(newest first, with each handler: instance compensate), why it failed,
and its variables. --json prints
the instance as the engine API returns it.`

const instanceCancelUsage = `usage: jetbpm instance cancel [flags] ID

Terminates an active instance, waits until it has stopped and prints
"ID terminated". Cancelling a finished instance is an error.`

const instanceCompensateUsage = `usage: jetbpm instance compensate [flags] ID

The operator's "abandon, then compensate" (docs/compensation.md): cancels
every token of an active instance (open incidents close as overtaken),
runs the compensation handlers of the activities it completed, newest
first and one at a time, then ends it terminated. --node N compensates
only node N's completions (each completed iteration of a multi-instance
N, the completed children of a sub-process N). Prints "ID compensating"
once the request is stored; a handler that fails raises an incident on
the handler, worked as usual. Refused, changing nothing, for a finished
instance, one compensating already, or when nothing is left to compensate.`

const instanceSetVarsUsage = `usage: jetbpm instance set-vars [flags] ID --vars JSON

Writes --vars (a JSON object of at least one variable) to the
process-level scope of an active instance, waits until the instance has
applied them and prints the instance as "instance show" does. Each write
is a variable event: a conditional event whose condition now holds fires
in that step. --request-id R names the request: sending R again writes
nothing (a safe retry). Refused, changing nothing, for a finished or
unknown instance.

  jetbpm instance set-vars order-1 --vars '{"approved": true}'`

const instanceTriggerUsage = `usage: jetbpm instance trigger [flags] ID

Moves on a token waiting at a receive task without a message — Camunda
7's plain wait state — waits until the instance has applied it and
prints the instance as "instance show" does. --node N names the receive
task (needed when the instance waits at several); --vars (a JSON object)
are the task's results: its output mappings see them, without mappings
they are written to its scope. --request-id R names the request: sending
R again moves nothing (a safe retry). Refused, changing nothing, when the
instance does not wait at such a task.

  jetbpm instance trigger order-1 --node waitForCall --vars '{"answer": "yes"}'`

const instancesUsage = `usage: jetbpm instances list [flags]

Lists process instances.`

const instancesListUsage = `usage: jetbpm instances list [flags]

Lists instances, newest first, as a table: ID, PROCESS, VERSION, STATUS,
STARTED and ACTIVE NODES. --status incident lists the instances that need
an operator: open incidents, or stuck at a join that can never fire;
--status active includes them (they are alive). The engine
reads every instance to answer, so keep this for operations, not for
polling.`

func runInstance(ctx context.Context, args []string) error {
	return runGroup(ctx, "instance", args)
}

func runInstances(ctx context.Context, args []string) error {
	return runGroup(ctx, "instances", args)
}

func runInstanceShow(ctx context.Context, args []string) error {
	return showOne(ctx, "instance show", "instance", args, (*apiClient).Instance, printInstance)
}

// showOne runs a "show ID" command: it reads one thing by id through the
// API and prints it as JSON (--json) or for a person.
func showOne[T any](ctx context.Context, name, what string, args []string,
	get func(*apiClient, context.Context, string) (T, error), print func(io.Writer, T) error) error {
	fs := newFlagSet(name)
	cf := addClientFlags(fs)
	asJSON := fs.Bool("json", false, "print the "+what+" as JSON")
	rest, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if err := wantArgs(name, rest, "ID"); err != nil {
		return err
	}
	c, err := cf.dial(name)
	if err != nil {
		return err
	}
	defer c.Close()
	ctx, cancel := c.withTimeout(ctx)
	defer cancel()
	v, err := get(c, ctx, rest[0])
	if err != nil {
		return c.explain(err)
	}
	if *asJSON {
		return printJSON(v)
	}
	return print(os.Stdout, v)
}

// printInstance writes the human view of an instance.
func printInstance(w io.Writer, v *engine.InstanceView) error {
	tw := tabwriter.NewWriter(w, 0, 0, 1, ' ', 0)
	fmt.Fprintf(tw, "id:\t%s\n", v.ID)
	fmt.Fprintf(tw, "process:\t%s@%d\n", v.ProcessID, v.Version)
	fmt.Fprintf(tw, "status:\t%s\n", v.Status)
	fmt.Fprintf(tw, "started:\t%s\n", formatTime(v.StartedAt))
	if v.EndedAt != nil {
		fmt.Fprintf(tw, "ended:\t%s\n", formatTime(*v.EndedAt))
	}
	if len(v.ActiveNodes) > 0 {
		fmt.Fprintf(tw, "active nodes:\t%s\n", strings.Join(v.ActiveNodes, ", "))
	}
	for _, inc := range v.Incidents {
		fmt.Fprintf(tw, "incident:\t%s at %s (%s, %s): %s\n", inc.ID, inc.Node, inc.CauseClass,
			plural(inc.Attempts, "attempt"), oneLine(inc.Cause))
	}
	for _, j := range v.Stuck {
		fmt.Fprintf(tw, "stuck:\t%s\n", formatStuck(j))
	}
	if len(v.Compensable) > 0 {
		var done []string
		for _, c := range v.Compensable {
			d := c.Node
			if c.Iteration > 0 {
				d += fmt.Sprintf("#%d", c.Iteration)
			}
			done = append(done, d+" (by "+c.Handler+")")
		}
		fmt.Fprintf(tw, "compensable:\t%s\n", strings.Join(done, ", "))
	}
	if v.Failure != nil {
		fmt.Fprintf(tw, "failure:\t%s\n", formatFailure(v.Failure))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	vars, err := json.MarshalIndent(v.Variables, "  ", "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "variables:\n  %s\n", vars)
	return err
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}

func formatTime(t time.Time) string { return t.Local().Format(time.RFC3339) }

// formatStuck says why a join can never fire.
func formatStuck(j instance.StuckJoin) string {
	s := fmt.Sprintf("at join %s since %s: waiting for %s, which no token can reach any more (arrived: %s",
		j.Node, formatTime(j.Since), strings.Join(j.Missing, ", "), strings.Join(j.Arrived, ", "))
	if len(j.Abandoned) > 0 {
		s += "; abandoned: " + strings.Join(j.Abandoned, ", ")
	}
	return s + ")"
}

func formatFailure(f *instance.Failure) string {
	var parts []string
	if f.Node != "" {
		parts = append(parts, "at "+f.Node)
	}
	if f.Code != "" {
		parts = append(parts, "code "+f.Code)
	}
	if len(parts) == 0 {
		return f.Message
	}
	return f.Message + " (" + strings.Join(parts, ", ") + ")"
}

func runInstanceCancel(ctx context.Context, args []string) error {
	fs := newFlagSet("instance cancel")
	cf := addClientFlags(fs)
	reason := fs.String("reason", "", "why, recorded with the termination")
	asJSON := fs.Bool("json", false, "print the terminated instance as JSON")
	rest, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if err := wantArgs("instance cancel", rest, "ID"); err != nil {
		return err
	}
	return instanceCommand(ctx, "instance cancel", cf, *asJSON,
		func(ctx context.Context, c *apiClient) (*engine.InstanceView, error) {
			return c.Cancel(ctx, rest[0], *reason)
		},
		func(v *engine.InstanceView) error { _, err := fmt.Printf("%s %s\n", v.ID, v.Status); return err })
}

// instanceCommand runs an instance command's call on the engine API
// within the client's timeout and prints the instance it answers: as JSON
// with --json, else by print.
func instanceCommand(ctx context.Context, name string, cf *clientFlags, asJSON bool,
	call func(context.Context, *apiClient) (*engine.InstanceView, error), print func(*engine.InstanceView) error) error {
	c, err := cf.dial(name)
	if err != nil {
		return err
	}
	defer c.Close()
	ctx, cancel := c.withTimeout(ctx)
	defer cancel()
	v, err := call(ctx, c)
	if err != nil {
		return c.explain(err)
	}
	if asJSON {
		return printJSON(v)
	}
	return print(v)
}

func runInstanceCompensate(ctx context.Context, args []string) error {
	fs := newFlagSet("instance compensate")
	cf := addClientFlags(fs)
	node := fs.String("node", "", "compensate only the completions of node `N`")
	asJSON := fs.Bool("json", false, "print the instance as JSON")
	rest, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if err := wantArgs("instance compensate", rest, "ID"); err != nil {
		return err
	}
	return instanceCommand(ctx, "instance compensate", cf, *asJSON,
		func(ctx context.Context, c *apiClient) (*engine.InstanceView, error) {
			return c.Compensate(ctx, rest[0], *node)
		},
		func(v *engine.InstanceView) error { _, err := fmt.Printf("%s compensating\n", v.ID); return err })
}

func runInstanceSetVars(ctx context.Context, args []string) error {
	const name = "instance set-vars"
	fs := newFlagSet(name)
	cf := addClientFlags(fs)
	vars := fs.String("vars", "", "the variables to write (a JSON `OBJECT`; required)")
	requestID := fs.String("request-id", "", "name the request `R`: sending R again writes nothing")
	asJSON := fs.Bool("json", false, "print the instance as JSON")
	rest, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if err := wantArgs(name, rest, "ID"); err != nil {
		return err
	}
	if *vars == "" {
		return usageErrorf(name, "--vars is required")
	}
	raw, err := jsonObject(*vars)
	if err != nil {
		return usageErrorf(name, "--vars: %v", err)
	}
	return instanceCommand(ctx, name, cf, *asJSON,
		func(ctx context.Context, c *apiClient) (*engine.InstanceView, error) {
			return c.SetVariables(ctx, rest[0], raw, *requestID)
		},
		func(v *engine.InstanceView) error { return printInstance(os.Stdout, v) })
}

func runInstanceTrigger(ctx context.Context, args []string) error {
	const name = "instance trigger"
	fs := newFlagSet(name)
	cf := addClientFlags(fs)
	node := fs.String("node", "", "the receive task `N` (needed when the instance waits at several)")
	vars := fs.String("vars", "", "the task's results (a JSON `OBJECT`)")
	requestID := fs.String("request-id", "", "name the request `R`: sending R again moves nothing")
	asJSON := fs.Bool("json", false, "print the instance as JSON")
	rest, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if err := wantArgs(name, rest, "ID"); err != nil {
		return err
	}
	var raw json.RawMessage
	if *vars != "" {
		if raw, err = jsonObject(*vars); err != nil {
			return usageErrorf(name, "--vars: %v", err)
		}
	}
	return instanceCommand(ctx, name, cf, *asJSON,
		func(ctx context.Context, c *apiClient) (*engine.InstanceView, error) {
			return c.Trigger(ctx, rest[0], *node, raw, *requestID)
		},
		func(v *engine.InstanceView) error { return printInstance(os.Stdout, v) })
}

// statuses are the values of instances list --status; incident lists the
// instances that need an operator, active includes them.
var statuses = []string{
	string(instance.Active), string(engine.StatusIncident), string(instance.Completed), string(instance.Failed), string(instance.Terminated),
}

func runInstancesList(ctx context.Context, args []string) error {
	fs := newFlagSet("instances list")
	cf := addClientFlags(fs)
	process := fs.String("process", "", "only instances of process `ID`")
	status := &choice{allowed: statuses}
	fs.Var(status, "status", "only instances with `STATUS`: "+strings.Join(statuses, ", "))
	limit := fs.Int("limit", 100, "show at most `N` instances, the newest; 0 shows all")
	asJSON := fs.Bool("json", false, "print the instances as a JSON array")
	rest, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if err := wantArgs("instances list", rest); err != nil {
		return err
	}
	if *limit < 0 {
		return usageErrorf("instances list", "--limit must be 0 or more")
	}

	c, err := cf.dial("instances list")
	if err != nil {
		return err
	}
	defer c.Close()
	ctx, cancel := c.withTimeout(ctx)
	defer cancel()
	list, err := c.Instances(ctx, api.ListRequest{ProcessID: *process, Status: status.value, Limit: *limit})
	if err != nil {
		return c.explain(err)
	}
	return printList(list, *asJSON, "ID\tPROCESS\tVERSION\tSTATUS\tSTARTED\tACTIVE NODES",
		func(v *engine.InstanceView) string {
			return fmt.Sprintf("%s\t%s\t%d\t%s\t%s\t%s", v.ID, v.ProcessID, v.Version, v.Status,
				formatTime(v.StartedAt), strings.Join(v.ActiveNodes, ","))
		})
}
