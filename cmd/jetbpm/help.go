package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
)

const helpUsage = `usage: jetbpm help [COMMAND [SUBCOMMAND]]

Shows the commands of jetbpm, or the usage and flags of one command
('jetbpm help instance show'). 'jetbpm COMMAND --help' does the same.`

func runHelp(ctx context.Context, args []string) error {
	fs := newFlagSet("help")
	rest, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	switch len(rest) {
	case 0:
		printOverview(os.Stdout)
		return nil
	case 1, 2: // 'jetbpm help instance show'
		name := strings.Join(rest, " ")
		cmd, ok := lookup(name)
		if !ok {
			return usageErrorf("help", "unknown command %q", name)
		}
		return cmd.run(ctx, []string{"--help"})
	default:
		return usageErrorf("help", "too many arguments")
	}
}

func printOverview(w io.Writer) {
	fmt.Fprint(w, "jetbpm runs BPMN processes on NATS JetStream.\n\nusage: jetbpm COMMAND [flags] [args]\n\ncommands:\n")
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-10s %s\n", c.name, c.summary)
	}
	fmt.Fprint(w, "\nRun 'jetbpm help COMMAND' for the flags of a command.\n")
}
