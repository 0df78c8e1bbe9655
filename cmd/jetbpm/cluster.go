package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/jetbpm/jetbpm/engine"
)

const clusterUsage = `usage: jetbpm cluster status [flags]

Shows the engine nodes sharing the store and the partitions each holds
(docs/engine.md §6.1).`

const clusterStatusUsage = `usage: jetbpm cluster status [flags]

Prints the live engine nodes (id, host, pid, when each started, the
partitions its last heartbeat said it holds), then each partition's
holder, since when, and its backlog: the events and workers' reports not
yet acknowledged and the age of the oldest. Any engine node answers, as
it sees the cluster. Exits 1 while a partition has no holder (a node
died and its leases have not expired yet, or no node runs); --json
prints the engine's answer as it is.`

func runCluster(ctx context.Context, args []string) error {
	return runGroup(ctx, "cluster", args)
}

func runClusterStatus(ctx context.Context, args []string) error {
	const name = "cluster status"
	fs := newFlagSet(name)
	cf := addClientFlags(fs)
	asJSON := fs.Bool("json", false, "print the engine's answer as JSON")
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
	v, err := c.ClusterStatus(ctx)
	if err != nil {
		return c.explain(err)
	}
	if *asJSON {
		err = printJSON(v)
	} else {
		err = printCluster(os.Stdout, v)
	}
	if err != nil {
		return err
	}
	var free []string
	for _, p := range v.Partition {
		if p.Node == "" {
			free = append(free, fmt.Sprint(p.Partition))
		}
	}
	if len(free) > 0 {
		return fmt.Errorf("no node holds partition(s) %s", strings.Join(free, ", "))
	}
	return nil
}

// printCluster writes the human view of a cluster status.
func printCluster(w io.Writer, v *engine.ClusterView) error {
	fmt.Fprintf(w, "%d engine node(s), %d partitions (answered by %s)\n\n", len(v.Nodes), v.Partitions, v.Node)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tHOST\tPID\tSTARTED\tHOLDS")
	for _, n := range v.Nodes {
		var holds []string
		for _, p := range n.Holds {
			holds = append(holds, fmt.Sprint(p))
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\n", n.ID, orDash(n.Host), n.PID, formatTime(n.Started), orDash(strings.Join(holds, ",")))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "PARTITION\tHOLDER\tSINCE\tPENDING\tOLDEST")
	for _, p := range v.Partition {
		oldest := "-"
		if p.Pending > 0 {
			oldest = (time.Duration(p.OldestSeconds * float64(time.Second))).Round(time.Millisecond).String()
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%d\t%s\n", p.Partition, orDash(p.Node), optionalTime(p.Since), p.Pending, oldest)
	}
	return tw.Flush()
}
