package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/jetbpm/jetbpm/engine/api"
)

const startUsage = `usage: jetbpm start [flags] PROCESS_ID

Starts an instance of the latest deployed version of PROCESS_ID (or of
--version N) and prints its id once the start is stored; the instance then
runs on its own ('jetbpm instance show ID' follows it).

--vars sets the instance's variables from a JSON object, e.g.
  jetbpm start order --vars '{"amount": 10, "quantity": 2}'
--id chooses the instance id (1-128 letters, digits, '-' or '_'); starting
the same id again within two minutes starts nothing new, so a failed start
can be retried safely.
--business-key stores a key on the instance: 'jetbpm message publish NAME
--business-key K' reaches its message catches that have no correlation key
(Camunda 7 models).`

func runStart(ctx context.Context, args []string) error {
	fs := newFlagSet("start")
	cf := addClientFlags(fs)
	vars := fs.String("vars", "", "the instance's variables as a JSON `OBJECT`")
	version := fs.Int("version", 0, "start version `N` instead of the latest")
	id := fs.String("id", "", "the instance `ID`; default a generated one")
	businessKey := fs.String("business-key", "", "the instance's business `KEY` (messages can reach it by this key)")
	asJSON := fs.Bool("json", false, `print {"id": ID}`)
	rest, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if err := wantArgs("start", rest, "PROCESS_ID"); err != nil {
		return err
	}
	if *version < 0 {
		return usageErrorf("start", "--version must be 1 or more")
	}
	req := api.StartRequest{ProcessID: rest[0], Version: *version, ID: *id, BusinessKey: *businessKey}
	if *vars != "" {
		if req.Vars, err = jsonObject(*vars); err != nil {
			return usageErrorf("start", "--vars: %v", err)
		}
	}

	c, err := cf.dial("start")
	if err != nil {
		return err
	}
	defer c.Close()
	ctx, cancel := c.withTimeout(ctx)
	defer cancel()
	started, err := c.Start(ctx, req)
	if err != nil {
		return c.explain(err)
	}
	if *asJSON {
		return printJSON(api.StartResponse{ID: started})
	}
	fmt.Println(started)
	return nil
}

// jsonObject checks that s is one JSON object and returns it.
func jsonObject(s string) (json.RawMessage, error) {
	var m map[string]json.RawMessage
	dec := json.NewDecoder(strings.NewReader(s))
	err := dec.Decode(&m)
	var typeErr *json.UnmarshalTypeError
	switch {
	case errors.As(err, &typeErr):
		return nil, fmt.Errorf("want a JSON object, not %s", typeErr.Value)
	case err != nil:
		return nil, fmt.Errorf("not valid JSON: %v", err)
	case m == nil:
		return nil, errors.New("want a JSON object, not null")
	case strings.TrimSpace(s[dec.InputOffset():]) != "":
		return nil, errors.New("want one JSON object, found more after it")
	}
	return json.RawMessage(s), nil
}
