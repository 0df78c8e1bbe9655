package main

import (
	"context"
	"strings"
)

// runGroup runs the command of group name that args[0] names, with the
// rest of args: 'jetbpm instance show ID' runs "instance show" with [ID].
// Flags before the subcommand may only be --help.
func runGroup(ctx context.Context, name string, args []string) error {
	fs := newFlagSet(name)
	i := 0
	for i < len(args) && strings.HasPrefix(args[i], "-") && args[i] != "-" {
		i++
	}
	if _, err := parseArgs(fs, args[:i]); err != nil {
		return err
	}
	group, _ := lookup(name)
	var names []string
	for _, s := range group.subs {
		short := strings.TrimPrefix(s.name, name+" ")
		if i < len(args) && args[i] == short {
			return s.run(ctx, args[i+1:])
		}
		names = append(names, short)
	}
	if i == len(args) {
		return usageErrorf(name, "missing subcommand: want %s", strings.Join(names, "|"))
	}
	return usageErrorf(name, "unknown subcommand %q: want %s", args[i], strings.Join(names, "|"))
}
