package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"unicode/utf8"

	"github.com/jetbpm/jetbpm/engine"
	"github.com/jetbpm/jetbpm/engine/api"
	"github.com/jetbpm/jetbpm/incidents"
)

const incidentsUsage = `usage: jetbpm incidents list [flags]

Lists incidents: technical failures the model did not handle, each holding
its token on the failing node until an operator (or the incident retry
policy) retries, resolves or abandons it.`

const incidentsListUsage = `usage: jetbpm incidents list [flags]

Lists incidents, oldest first failure first, as a table: ID, INSTANCE,
PROCESS, NODE, CAUSE CLASS, ATTEMPTS, STATE, FIRST FAILURE, LAST FAILURE
and the latest cause (truncated; 'jetbpm incident show ID' has it whole).
Only open incidents are listed unless --state says otherwise. The engine
reads the incident records only, never an instance. --json prints the
records as a JSON array.`

const incidentUsage = `usage: jetbpm incident show|retry|resolve|abandon [flags] ID

Shows or operates one incident. An action on an incident that is already
closed (resolved, dead-lettered or overtaken) is refused.`

const incidentShowUsage = `usage: jetbpm incident show [flags] ID

Shows an incident: its instance, process and node, state, cause class,
attempts, first and last failure, the lineage of tracks that failed, the
cause chain (oldest first), its history of transitions and the variables
the node saw at each failure. --json prints it as the engine API returns it.`

const incidentRetryUsage = `usage: jetbpm incident retry [flags] ID

Re-enters the incident's node now on a fresh track (an external task gets a
new job with a fresh retry budget), cancelling a scheduled retry, and
prints "ID retried". If the node fails again the same incident is raised
again, one attempt more.`

const incidentResolveUsage = `usage: jetbpm incident resolve [flags] ID

Closes the incident as handled outside the engine: sets --vars (a JSON
object), then continues from the node's outgoing flows as if it had
completed, without running it. Prints "ID resolved", e.g.
  jetbpm incident resolve ID --vars '{"receipt": "paid by phone"}'`

const incidentAbandonUsage = `usage: jetbpm incident abandon [flags] ID

Closes the incident as dead-lettered (its record is kept) and cancels its
token; an instance left without a token ends terminated. Prints
"ID dead-lettered".`

func runIncidents(ctx context.Context, args []string) error {
	return runGroup(ctx, "incidents", args)
}

func runIncident(ctx context.Context, args []string) error {
	return runGroup(ctx, "incident", args)
}

// causeClasses are the values of incidents list --cause.
var causeClasses = []string{
	incidents.CauseOperation, incidents.CauseExpression, incidents.CauseDataFlow,
	incidents.CauseRetriesExhausted, incidents.CauseBpmnError, incidents.CauseChildFailed,
}

func runIncidentsList(ctx context.Context, args []string) error {
	const name = "incidents list"
	fs := newFlagSet(name)
	cf := addClientFlags(fs)
	var req api.IncidentListRequest
	fs.StringVar(&req.Instance, "instance", "", "only incidents of instance `ID`")
	fs.StringVar(&req.Process, "process", "", "only incidents of process `ID`")
	fs.StringVar(&req.Node, "node", "", "only incidents on node `ID`")
	cause := &choice{allowed: causeClasses}
	fs.Var(cause, "cause", "only incidents of cause `CLASS`: "+strings.Join(causeClasses, ", "))
	state := &choice{value: "open", allowed: api.IncidentStates}
	fs.Var(state, "state", "list `STATE` incidents: "+strings.Join(api.IncidentStates, ", "))
	olderThan := fs.String("older-than", "", "only incidents whose first failure is at least `AGE` old (90m, 36h, 7d)")
	asJSON := fs.Bool("json", false, "print the incidents as a JSON array")
	rest, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if err := wantArgs(name, rest); err != nil {
		return err
	}
	if *olderThan != "" {
		if _, err := api.ParseAge(*olderThan); err != nil {
			return usageErrorf(name, "--older-than: %v", err)
		}
	}
	req.Cause, req.State, req.OlderThan = cause.value, state.value, *olderThan

	c, err := cf.dial(name)
	if err != nil {
		return err
	}
	defer c.Close()
	ctx, cancel := c.withTimeout(ctx)
	defer cancel()
	list, err := c.Incidents(ctx, req)
	if err != nil {
		return c.explain(err)
	}
	return printList(list, *asJSON, "ID\tINSTANCE\tPROCESS\tNODE\tCAUSE CLASS\tATTEMPTS\tSTATE\tFIRST FAILURE\tLAST FAILURE\tCAUSE",
		func(r *incidents.Record) string {
			return fmt.Sprintf("%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s", r.ID, r.Instance, r.ProcessID, r.Node, r.CauseClass,
				r.Attempts, r.State, formatTime(r.FirstFailure), formatTime(r.LastFailure), truncate(oneLine(r.Cause()), maxCause))
		})
}

// maxCause bounds the cause shown in the incidents table.
const maxCause = 60

// truncate shortens s to at most n runes, marking the cut with "…".
func truncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n-1]) + "…"
}

func runIncidentShow(ctx context.Context, args []string) error {
	return showOne(ctx, "incident show", "incident", args, (*apiClient).Incident, printIncident)
}

// printIncident writes the human view of an incident.
func printIncident(w io.Writer, v *engine.IncidentView) error {
	r := v.Record
	if r == nil {
		r = &incidents.Record{}
	}
	tw := tabwriter.NewWriter(w, 0, 0, 1, ' ', 0)
	fmt.Fprintf(tw, "id:\t%s\n", r.ID)
	fmt.Fprintf(tw, "instance:\t%s\n", r.Instance)
	fmt.Fprintf(tw, "process:\t%s@%d\n", r.ProcessID, r.Version)
	fmt.Fprintf(tw, "node:\t%s\n", r.Node)
	fmt.Fprintf(tw, "state:\t%s\n", r.State)
	fmt.Fprintf(tw, "cause class:\t%s\n", r.CauseClass)
	fmt.Fprintf(tw, "attempts:\t%d\n", r.Attempts)
	fmt.Fprintf(tw, "first failure:\t%s\n", formatTime(r.FirstFailure))
	fmt.Fprintf(tw, "last failure:\t%s\n", formatTime(r.LastFailure))
	if !r.RetryDue.IsZero() {
		fmt.Fprintf(tw, "retry due:\t%s\n", formatTime(r.RetryDue))
	}
	fmt.Fprintf(tw, "lineage:\t%s\n", strings.Join(r.Lineage, " → "))
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w, "causes (oldest first):")
	for i, c := range r.Causes {
		fmt.Fprintf(w, "  %d. %s\n", i+1, oneLine(c))
	}
	fmt.Fprintln(w, "history:")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, t := range r.History {
		line := fmt.Sprintf("  %d\t%s\t%s", t.Seq, formatTime(t.Time), t.Kind)
		var extra []string
		if t.Detail != "" {
			extra = append(extra, oneLine(t.Detail))
		}
		if t.Command != "" {
			extra = append(extra, "command "+t.Command)
		}
		fmt.Fprintf(tw, "%s\t%s\n", line, strings.Join(extra, "; "))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w, "variables at each failure:")
	if len(v.Variables) == 0 {
		fmt.Fprintln(w, "  (none kept)")
	}
	for _, snap := range v.Variables {
		vars, err := json.MarshalIndent(snap.Vars, "    ", "  ")
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "  attempt %d (%s):\n    %s\n", snap.Attempt, formatTime(snap.Time), vars)
	}
	return nil
}

// incidentAction is one of incident retry, resolve and abandon.
type incidentAction struct {
	name string // "incident retry"
	done string // what the result line says: "retried"
	// call performs the action; vars is --vars (resolve only).
	call func(c *apiClient, ctx context.Context, id string, vars json.RawMessage) (*engine.IncidentView, error)
}

func runIncidentRetry(ctx context.Context, args []string) error {
	return runIncidentAction(ctx, args, incidentAction{name: "incident retry", done: "retried",
		call: func(c *apiClient, ctx context.Context, id string, _ json.RawMessage) (*engine.IncidentView, error) {
			return c.RetryIncident(ctx, id)
		}})
}

func runIncidentResolve(ctx context.Context, args []string) error {
	return runIncidentAction(ctx, args, incidentAction{name: "incident resolve", done: "resolved",
		call: func(c *apiClient, ctx context.Context, id string, vars json.RawMessage) (*engine.IncidentView, error) {
			return c.ResolveIncident(ctx, id, vars)
		}})
}

func runIncidentAbandon(ctx context.Context, args []string) error {
	return runIncidentAction(ctx, args, incidentAction{name: "incident abandon", done: "dead-lettered",
		call: func(c *apiClient, ctx context.Context, id string, _ json.RawMessage) (*engine.IncidentView, error) {
			return c.AbandonIncident(ctx, id)
		}})
}

func runIncidentAction(ctx context.Context, args []string, a incidentAction) error {
	fs := newFlagSet(a.name)
	cf := addClientFlags(fs)
	var vars *string
	if a.name == "incident resolve" {
		vars = fs.String("vars", "", "set these variables (a JSON `OBJECT`) before continuing")
	}
	asJSON := fs.Bool("json", false, "print the incident as JSON afterwards")
	rest, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if err := wantArgs(a.name, rest, "ID"); err != nil {
		return err
	}
	var raw json.RawMessage
	if vars != nil && *vars != "" {
		if raw, err = jsonObject(*vars); err != nil {
			return usageErrorf(a.name, "--vars: %v", err)
		}
	}

	c, err := cf.dial(a.name)
	if err != nil {
		return err
	}
	defer c.Close()
	ctx, cancel := c.withTimeout(ctx)
	defer cancel()
	v, err := a.call(c, ctx, rest[0], raw)
	if err != nil {
		return c.explain(err)
	}
	if *asJSON {
		return printJSON(v)
	}
	fmt.Printf("%s %s\n", rest[0], a.done)
	return nil
}
