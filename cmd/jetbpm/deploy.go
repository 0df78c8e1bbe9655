package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"time"

	"github.com/jetbpm/jetbpm/engine/api"
)

const deployUsage = `usage: jetbpm deploy [flags] FILE...

Deploys the processes of BPMN 2.0 XML files to the engine and prints
"PROCESS_ID VERSION" for each, with "(unchanged)" after a process whose
latest version already is this definition (deploying is idempotent), or
"(timer start NODE first fires TIME)" after a new version whose timer
start event the deploy armed. A process that deploys with warnings (an
element jetbpm ignores, an in-process operation this engine has not
registered) has each printed on standard error, one a line.

Every file is read first and all are sent in one request. The engine
checks every process before it writes any, and writes all new versions
in one atomic batch: a bad file, or a write that fails, deploys nothing.
When a file has several import problems the error shows the first and
"(and N more problems)"; --verbose prints every one, a line each, and
--json prints {"error": {"code", "message", "problems": [{"file", "line",
"element", "message"}, ...]}} on standard output (exiting 1 as well).
jetbpm's importer reports at most 20 problems a file.`

func runDeploy(ctx context.Context, args []string) error {
	flags := newFlagSet("deploy")
	cf := addClientFlags(flags)
	asJSON := flags.Bool("json", false, "print the deployments as a JSON array (or the refusal, every problem with its file, line and element)")
	verbose := flags.Bool("verbose", false, "print every problem of a refused deploy, a line each")
	rest, err := parseArgs(flags, args)
	if err != nil {
		return err
	}
	if len(rest) == 0 {
		return usageErrorf("deploy", "missing FILE")
	}
	files := make([]api.File, 0, len(rest))
	for _, name := range rest {
		b, err := os.ReadFile(name)
		var pathErr *fs.PathError
		if errors.As(err, &pathErr) {
			err = pathErr.Err // "cannot read x.bpmn: no such file or directory"
		}
		if err != nil {
			return fmt.Errorf("cannot read %s: %w", name, err)
		}
		files = append(files, api.File{Name: name, XML: string(b)})
	}

	c, err := cf.dial("deploy")
	if err != nil {
		return err
	}
	defer c.Close()
	ctx, cancel := c.withTimeout(ctx)
	defer cancel()
	deps, err := c.Deploy(ctx, files...)
	var apiErr *api.Error
	switch {
	case err == nil:
	case *asJSON && errors.As(err, &apiErr):
		if perr := printJSON(map[string]any{"error": apiErr}); perr != nil {
			return perr
		}
		return firstProblem(err)
	case *verbose && errors.As(err, &apiErr) && len(apiErr.Problems) > 0:
		for _, p := range apiErr.Problems {
			fmt.Fprintf(os.Stderr, "%s: %s\n", p.File, p.Message)
		}
		return fmt.Errorf("nothing deployed: %d problems", len(apiErr.Problems))
	default:
		return firstProblem(c.explain(err))
	}
	if *asJSON {
		return printJSON(deps)
	}
	for _, d := range deps {
		suffix := ""
		switch {
		case !d.New:
			suffix = " (unchanged)"
		case d.TimerStart != nil:
			suffix = fmt.Sprintf(" (timer start %s first fires %s)", d.TimerStart.Node, d.TimerStart.Next.UTC().Format(time.RFC3339))
		}
		fmt.Printf("%s %d%s\n", d.ProcessID, d.Version, suffix)
		for _, w := range d.Warnings {
			fmt.Fprintf(os.Stderr, "warning: %s: %s\n", d.ProcessID, w)
		}
	}
	return nil
}

// firstProblem shortens an engine error listing several import problems,
// one a line, to the first and their count.
func firstProblem(err error) error {
	var apiErr *api.Error
	if !errors.As(err, &apiErr) {
		return err
	}
	lines := strings.Split(strings.TrimSpace(apiErr.Message), "\n")
	if len(lines) < 2 {
		return err
	}
	more := "problems"
	if len(lines) == 2 {
		more = "problem"
	}
	return fmt.Errorf("%s (and %d more %s)", lines[0], len(lines)-1, more)
}
