// Command jetbpm runs the jetbpm BPMN engine and operates it.
//
// Every subcommand is one entry of commands() and one file holding its run
// function. Exit codes: 0 ok, 1 runtime error, 2 usage error; errors are one
// line on stderr, help goes to stdout.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

// command is one jetbpm subcommand.
type command struct {
	name    string
	summary string // one line for 'jetbpm help'
	usage   string // synopsis and description; the flags are listed after it
	// run parses args with newFlagSet and parseArgs before anything else,
	// so that 'jetbpm help NAME' (which runs it with --help) shows its flags.
	run func(ctx context.Context, args []string) error
}

// commands lists the subcommands in the order 'jetbpm help' shows them.
func commands() []command {
	return []command{
		{"serve", "run the engine, with an embedded NATS server unless --nats-url is given", serveUsage, runServe},
		{"help", "show the commands, or the usage and flags of one command", helpUsage, runHelp},
	}
}

func lookup(name string) (command, bool) {
	for _, c := range commands() {
		if c.name == name {
			return c, true
		}
	}
	return command{}, false
}

func main() { os.Exit(run(os.Args[1:])) }

// run dispatches to a command and turns its error into an exit code.
func run(args []string) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		stop() // a second signal gets the default behaviour: exit at once
	}()

	if len(args) == 0 {
		printOverview(os.Stderr)
		return 2
	}
	name := args[0]
	if name == "-h" || name == "-help" || name == "--help" {
		name = "help"
	}
	cmd, ok := lookup(name)
	if !ok {
		fmt.Fprintf(os.Stderr, "jetbpm: unknown command %q; run 'jetbpm help'\n", name)
		return 2
	}
	return exitCode(cmd.run(ctx, args[1:]))
}

func exitCode(err error) int {
	var usage *usageError
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &usage):
		fmt.Fprintf(os.Stderr, "jetbpm: %s; run 'jetbpm help %s'\n", oneLine(usage.msg), usage.cmd)
		return 2
	default:
		fmt.Fprintf(os.Stderr, "jetbpm: %s\n", oneLine(err.Error()))
		return 1
	}
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(s, "\n", "; ")), " ")
}
