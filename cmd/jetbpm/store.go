package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"text/tabwriter"

	"github.com/jetbpm/jetbpm/engine/api"
	"github.com/jetbpm/jetbpm/engine/lost"
)

const storeUsage = `usage: jetbpm store check|dismiss|recreate [flags]

Checks the engine's store for damage the NATS server does not report,
and acts on the damage records a check wrote (docs/reliability.md, "A
damaged store").`

const storeDismissUsage = `usage: jetbpm store dismiss --reason TEXT [flags] KEY

Closes the open damage record KEY (as 'jetbpm store check' prints it:
instance.ID or stream.STREAM.SEQUENCE) as dismissed with the reason:
what it names is accepted as lost. Prints "KEY dismissed".`

const storeRecreateUsage = `usage: jetbpm store recreate [flags] KEY

Starts a new instance in place of the lost instance of damage record KEY
(instance.ID) and closes the record as recreated. The new instance is of
the record's process, from its start event, with the variables the
store still held: what ran before the element it was last known at runs
again. Its id is the lost one's with "-recreated". Prints the new id.`

const storeCheckUsage = `usage: jetbpm store check [flags]

Asks the engine to check its store now, as each engine node does when it
starts: streams whose last sequence went below the high-water marks the
engine keeps, instances that a job, a timer, an open user task, an open
incident or a message subscription still names but that have no
checkpoint, and processes whose definitions were lost. Each loss gets a
record (once); the command prints what the check read and every record —
for a lost instance its process, the element it was last known at, the
variables the traces still hold and where they came from — and exits 1
while a record is open, 0 when the store is whole. --all prints closed
records too; --json prints the engine's answer as it is.`

func runStore(ctx context.Context, args []string) error {
	return runGroup(ctx, "store", args)
}

func runStoreDismiss(ctx context.Context, args []string) error {
	const name = "store dismiss"
	fs := newFlagSet(name)
	cf := addClientFlags(fs)
	reason := fs.String("reason", "", "why what the record names is accepted as lost (required)")
	rest, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if err := wantArgs(name, rest, "KEY"); err != nil {
		return err
	}
	if *reason == "" {
		return usageErrorf(name, "missing --reason")
	}
	c, err := cf.dial(name)
	if err != nil {
		return err
	}
	defer c.Close()
	ctx, cancel := c.withTimeout(ctx)
	defer cancel()
	if _, err := c.StoreDismiss(ctx, rest[0], *reason); err != nil {
		return c.explain(err)
	}
	fmt.Printf("%s dismissed\n", rest[0])
	return nil
}

func runStoreRecreate(ctx context.Context, args []string) error {
	const name = "store recreate"
	fs := newFlagSet(name)
	cf := addClientFlags(fs)
	rest, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if err := wantArgs(name, rest, "KEY"); err != nil {
		return err
	}
	c, err := cf.dial(name)
	if err != nil {
		return err
	}
	defer c.Close()
	ctx, cancel := c.withTimeout(ctx)
	defer cancel()
	id, err := c.StoreRecreate(ctx, rest[0])
	if err != nil {
		return c.explain(err)
	}
	fmt.Println(id)
	return nil
}

func runStoreCheck(ctx context.Context, args []string) error {
	const name = "store check"
	fs := newFlagSet(name)
	cf := addClientFlags(fs)
	all := fs.Bool("all", false, "print closed records too")
	asJSON := fs.Bool("json", false, "print the check's report and the records as JSON")
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
	res, err := c.StoreCheck(ctx)
	if err != nil {
		return c.explain(err)
	}
	if *asJSON {
		err = printJSON(res)
	} else {
		err = printStoreCheck(os.Stdout, res, *all)
	}
	if err != nil {
		return err
	}
	switch {
	case res.Open > 0:
		return fmt.Errorf("store damaged: %d open record(s)", res.Open)
	case len(res.Report.Rearmed) > 0:
		return fmt.Errorf("store damaged: %d job(s) or timer(s) were lost and are put back", len(res.Report.Rearmed))
	}
	return nil
}

// printStoreCheck writes the human view of a store check.
func printStoreCheck(w io.Writer, res *api.StoreCheckResponse, all bool) error {
	r := res.Report
	fmt.Fprintf(w, "read: %d checkpoints, %d jobs, %d timers, %d open tasks, %d open incidents, %d message subscriptions, %d signal waits in %s\n",
		r.Read.Checkpoints, r.Read.Jobs, r.Read.Timers, r.Read.Tasks, r.Read.Incidents, r.Read.Subscriptions, r.Read.Signals, r.Took.Round(1e6))
	for _, s := range r.Read.Unindexed {
		fmt.Fprintf(w, "problem: stream %s's index names more subjects than it holds messages (the server lost messages it still lists)\n", s)
	}
	for _, p := range r.Problems {
		fmt.Fprintf(w, "problem: %s\n", p)
	}
	for _, rec := range r.Rearmed {
		fmt.Fprintf(w, "put back: %s\n", oneLine(rec.Detail))
	}
	recs := slices.DeleteFunc(slices.Clone(res.Records), func(rec lost.Record) bool { return !all && rec.Status != lost.Open })
	if len(recs) == 0 {
		if res.Open == 0 && len(r.Rearmed) == 0 {
			fmt.Fprintln(w, "store whole: no open damage records")
		}
		return nil
	}
	fmt.Fprintf(w, "store damaged: %d open record(s)\n\n", res.Open)
	for _, rec := range recs {
		tw := tabwriter.NewWriter(w, 0, 0, 1, ' ', 0)
		switch rec.Kind {
		case lost.Stream:
			fmt.Fprintf(tw, "stream:\t%s\n", rec.Gap.Stream)
		case lost.Definition:
			fmt.Fprintf(tw, "definition:\t%s\n", rec.Process)
		case lost.Wait:
			fmt.Fprintf(tw, "wait of instance:\t%s\n", rec.Instance)
		default:
			fmt.Fprintf(tw, "%s instance:\t%s\n", map[lost.Kind]string{lost.Instance: "lost", lost.Damaged: "damaged"}[rec.Kind], rec.Instance)
		}
		fmt.Fprintf(tw, "key:\t%s\n", rec.Key())
		fmt.Fprintf(tw, "status:\t%s\n", rec.Status)
		switch {
		case rec.Kind == lost.Definition:
		case rec.Process != "" && rec.Version > 0:
			fmt.Fprintf(tw, "process:\t%s@%d\n", rec.Process, rec.Version)
		case rec.Process != "":
			fmt.Fprintf(tw, "process:\t%s (version not known)\n", rec.Process)
		}
		if rec.Element != "" {
			fmt.Fprintf(tw, "last known at:\t%s\n", rec.Element)
		}
		fmt.Fprintf(tw, "detected:\t%s\n", formatTime(rec.Detected))
		fmt.Fprintf(tw, "detail:\t%s\n", oneLine(rec.Detail))
		if rec.Reason != "" {
			fmt.Fprintf(tw, "reason:\t%s\n", rec.Reason)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		for _, t := range rec.Traces {
			fmt.Fprintf(w, "  from %s %s", t.Source, t.ID)
			if !t.At.IsZero() {
				fmt.Fprintf(w, " (%s)", formatTime(t.At))
			}
			if t.Vars != nil {
				vars, err := json.Marshal(t.Vars)
				if err != nil {
					return err
				}
				fmt.Fprintf(w, ": variables %s", vars)
			}
			fmt.Fprintln(w)
		}
		fmt.Fprintln(w)
	}
	return nil
}
