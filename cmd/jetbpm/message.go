package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"

	"github.com/jetbpm/jetbpm/engine/api"
)

const messageUsage = `usage: jetbpm message publish|correlate [flags] NAME

Sends a message to waiting process instances (message catch events,
receive tasks, message boundary events, event-based gateways) or starts an
instance at a message start event.`

const messagePublishUsage = `usage: jetbpm message publish [flags] NAME

Publishes message NAME and prints its id. Whom it is for:
  --key K           instances waiting for NAME with correlation key K
                    (a catch's correlation key expression gave K)
  --business-key K  instances started with business key K whose catch has
                    no correlation key (Camunda 7 models)
  --instance ID     that instance only: its oldest catch of NAME takes it
None of them: only message start events take it.

A message reaches at most one instance of each process, the one waiting
longest. With --ttl it is kept that long for instances that wait for it
later; without, a message nobody waits for is gone. --id makes a second
publish with the same id an error while the first is kept.
  jetbpm message publish order-paid --key o-17 --vars '{"amount": 20}' --ttl 1h`

const messageCorrelateUsage = `usage: jetbpm message correlate [flags] NAME

Delivers message NAME like 'message publish' (same --key, --business-key,
--instance), waits until an instance has taken it and prints that
instance's id. If no instance waits for it, nothing is kept and the command
fails with the reason.`

func runMessage(ctx context.Context, args []string) error {
	return runGroup(ctx, "message", args)
}

func runMessagePublish(ctx context.Context, args []string) error {
	return sendMessage(ctx, "message publish", args, true)
}

func runMessageCorrelate(ctx context.Context, args []string) error {
	return sendMessage(ctx, "message correlate", args, false)
}

func sendMessage(ctx context.Context, name string, args []string, publish bool) error {
	fs := newFlagSet(name)
	cf := addClientFlags(fs)
	req, vars := messageFlags(fs)
	var ttl *string
	if publish {
		ttl = fs.String("ttl", "", "keep the message this `LONG` for later subscriptions (90s, 1h, 7d)")
	}
	asJSON := fs.Bool("json", false, "print the answer as JSON")
	rest, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if err := wantArgs(name, rest, "NAME"); err != nil {
		return err
	}
	req.Name = rest[0]
	if n := countSet(req.keyText != "", req.BusinessKey != "", req.Instance != ""); n > 1 {
		return usageErrorf(name, "--key, --business-key and --instance are exclusive")
	}
	if req.keyText != "" {
		req.Key, _ = json.Marshal(req.keyText)
	}
	if *vars != "" {
		if req.Vars, err = jsonObject(*vars); err != nil {
			return usageErrorf(name, "--vars: %v", err)
		}
	}
	if ttl != nil {
		req.TTL = *ttl
	}

	c, err := cf.dial(name)
	if err != nil {
		return err
	}
	defer c.Close()
	ctx, cancel := c.withTimeout(ctx)
	defer cancel()
	if publish {
		id, err := c.PublishMessage(ctx, req.MessageRequest)
		if err != nil {
			return c.explain(err)
		}
		if *asJSON {
			return printJSON(api.MessagePublishResponse{ID: id})
		}
		fmt.Println(id)
		return nil
	}
	inst, err := c.CorrelateMessage(ctx, req.MessageRequest)
	if err != nil {
		return c.explain(err)
	}
	if *asJSON {
		return printJSON(api.MessageCorrelateResponse{Instance: inst})
	}
	fmt.Println(inst)
	return nil
}

// messageRequest is a MessageRequest being filled from flags; the key is
// text on the command line (a number is written as its digits).
type messageRequest struct {
	api.MessageRequest
	keyText string
}

func messageFlags(fs *flag.FlagSet) (*messageRequest, *string) {
	req := &messageRequest{}
	fs.StringVar(&req.keyText, "key", "", "the correlation `KEY`")
	fs.StringVar(&req.BusinessKey, "business-key", "", "for instances started with this business `KEY`")
	fs.StringVar(&req.Instance, "instance", "", "for this instance `ID` only")
	fs.StringVar(&req.ID, "id", "", "the message `ID`; default a generated one")
	vars := fs.String("vars", "", "the message's variables as a JSON `OBJECT`")
	return req, vars
}

func countSet(flags ...bool) int {
	n := 0
	for _, f := range flags {
		if f {
			n++
		}
	}
	return n
}
