package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/jetbpm/jetbpm/engine"
	"github.com/jetbpm/jetbpm/engine/api"
)

const processesUsage = `usage: jetbpm processes list [flags]

Lists the deployed processes.`

const processesListUsage = `usage: jetbpm processes list [flags]

Lists the latest version of every deployed process, by id, as a table: ID,
NAME, VERSION, VERSIONS (how many), DEPLOYED and TIMER START.`

const processUsage = `usage: jetbpm process show [flags] ID

Shows one deployed process.`

const processShowUsage = `usage: jetbpm process show [flags] ID

Shows a deployed process version (the latest unless --version): its name,
versions, when it was deployed and its timer start events. --xml prints
the BPMN document it was deployed from instead (processes built in Go
have none); --json prints it as the engine API returns it.`

func runProcesses(ctx context.Context, args []string) error {
	return runGroup(ctx, "processes", args)
}

func runProcess(ctx context.Context, args []string) error {
	return runGroup(ctx, "process", args)
}

func runProcessesList(ctx context.Context, args []string) error {
	const name = "processes list"
	fs := newFlagSet(name)
	cf := addClientFlags(fs)
	asJSON := fs.Bool("json", false, "print the processes as a JSON array")
	rest, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if err := wantArgs(name, rest); err != nil {
		return err
	}
	c, err := cf.dial(name)
	if err != nil {
		return err
	}
	defer c.Close()
	ctx, cancel := c.withTimeout(ctx)
	defer cancel()
	list, err := c.Processes(ctx)
	if err != nil {
		return c.explain(err)
	}
	return printList(list, *asJSON, "ID\tNAME\tVERSION\tVERSIONS\tDEPLOYED\tTIMER START", func(p engine.ProcessInfo) string {
		return fmt.Sprintf("%s\t%s\t%d\t%d\t%s\t%s", p.ID, orDash(p.Name), p.Version, len(p.Versions),
			formatTime(p.DeployedAt), orDash(timerStarts(p.TimerStarts)))
	})
}

func runProcessShow(ctx context.Context, args []string) error {
	const name = "process show"
	fs := newFlagSet(name)
	cf := addClientFlags(fs)
	version := fs.Int("version", 0, "show version `N`; 0: the latest")
	asXML := fs.Bool("xml", false, "print the BPMN document the version was deployed from")
	asJSON := fs.Bool("json", false, "print the process as JSON")
	rest, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if err := wantArgs(name, rest, "ID"); err != nil {
		return err
	}
	if *version < 0 {
		return usageErrorf(name, "--version must be 0 (the latest) or more")
	}
	c, err := cf.dial(name)
	if err != nil {
		return err
	}
	defer c.Close()
	ctx, cancel := c.withTimeout(ctx)
	defer cancel()
	p, err := c.Process(ctx, api.ProcessRequest{ID: rest[0], Version: *version, XML: *asXML})
	if err != nil {
		return c.explain(err)
	}
	switch {
	case *asJSON:
		return printJSON(p)
	case *asXML:
		_, err := io.WriteString(os.Stdout, p.XML)
		return err
	}
	return printProcess(os.Stdout, p.ProcessInfo)
}

// printProcess writes the human view of a process version.
func printProcess(w io.Writer, p engine.ProcessInfo) error {
	tw := tabwriter.NewWriter(w, 0, 0, 1, ' ', 0)
	fmt.Fprintf(tw, "id:\t%s\n", p.ID)
	if p.Name != "" {
		fmt.Fprintf(tw, "name:\t%s\n", p.Name)
	}
	fmt.Fprintf(tw, "version:\t%d\n", p.Version)
	vs := make([]string, len(p.Versions))
	for i, v := range p.Versions {
		vs[i] = strconv.Itoa(v)
	}
	fmt.Fprintf(tw, "versions:\t%s\n", strings.Join(vs, ", "))
	fmt.Fprintf(tw, "deployed:\t%s\n", formatTime(p.DeployedAt))
	if len(p.TimerStarts) > 0 {
		fmt.Fprintf(tw, "timer start:\t%s\n", timerStarts(p.TimerStarts))
	}
	fmt.Fprintf(tw, "source kept:\t%t\n", p.HasSource)
	return tw.Flush()
}

func timerStarts(ts []engine.TimerStartInfo) string {
	var out []string
	for _, t := range ts {
		out = append(out, fmt.Sprintf("%s (%s %s)", t.Node, t.Type, t.Value))
	}
	return strings.Join(out, ", ")
}
