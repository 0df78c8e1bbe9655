package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/jetbpm/jetbpm/engine/api"
)

const signalUsage = `usage: jetbpm signal broadcast [flags] NAME

Broadcasts signals to process instances (docs/signals.md).`

const signalBroadcastUsage = `usage: jetbpm signal broadcast [flags] NAME

Broadcasts signal NAME to every instance waiting for it (signal catch and
boundary events, every process) and starts one instance of each process
whose latest version has a signal start event NAME. Nothing is kept: an
instance that waits for NAME later does not get this broadcast. Prints the
broadcast's id, then how many instances it reached and which it started.
--id makes a repeated broadcast (a retry) apply once.
  jetbpm signal broadcast order-cancelled --vars '{"reason": "fraud"}'`

func runSignal(ctx context.Context, args []string) error {
	return runGroup(ctx, "signal", args)
}

func runSignalBroadcast(ctx context.Context, args []string) error {
	const name = "signal broadcast"
	fs := newFlagSet(name)
	cf := addClientFlags(fs)
	var req api.SignalRequest
	fs.StringVar(&req.ID, "id", "", "the broadcast `ID`; default a generated one")
	vars := fs.String("vars", "", "the signal's variables as a JSON `OBJECT`")
	asJSON := fs.Bool("json", false, "print the answer as JSON")
	rest, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if err := wantArgs(name, rest, "NAME"); err != nil {
		return err
	}
	req.Name = rest[0]
	if *vars != "" {
		if req.Vars, err = jsonObject(*vars); err != nil {
			return usageErrorf(name, "--vars: %v", err)
		}
	}
	c, err := cf.dial(name)
	if err != nil {
		return err
	}
	defer c.Close()
	ctx, cancel := c.withTimeout(ctx)
	defer cancel()
	res, err := c.BroadcastSignal(ctx, req)
	if err != nil {
		return c.explain(err)
	}
	if *asJSON {
		return printJSON(res)
	}
	fmt.Println(res.ID)
	fmt.Printf("reached %d instance(s)\n", len(res.Instances))
	if len(res.Started) > 0 {
		fmt.Printf("started %s\n", strings.Join(res.Started, " "))
	}
	return nil
}
