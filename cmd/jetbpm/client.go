package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"text/tabwriter"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/jetbpm/jetbpm/engine/api"
	"github.com/jetbpm/jetbpm/streams"
)

// defaultRequestTimeout bounds a client command's request when --timeout is
// not given.
const defaultRequestTimeout = 30 * time.Second

// clientFlags are the flags of the commands that call the engine API.
type clientFlags struct {
	conn    *connFlags
	timeout time.Duration
}

func addClientFlags(fs *flag.FlagSet) *clientFlags {
	c := &clientFlags{conn: addConnFlags(fs, defaultNATSURL)}
	fs.DurationVar(&c.timeout, "timeout", defaultRequestTimeout, "give up on the engine's answer after `DURATION`")
	return c
}

// apiClient is a connection to NATS and the engine API on it.
type apiClient struct {
	*api.Client
	nc      *nats.Conn
	url     string // redacted, for messages
	timeout time.Duration
}

// dial connects to NATS. The caller closes the client and bounds its calls
// with ctx from withTimeout.
func (c *clientFlags) dial(cmd string) (*apiClient, error) {
	if c.timeout <= 0 {
		return nil, usageErrorf(cmd, "--timeout must be positive")
	}
	cfg := c.conn.config("jetbpm " + cmd)
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil)) // a command prints results, not logs
	u := streams.RedactURLs(cfg.URL)
	nc, err := streams.Connect(cfg)
	if err != nil {
		if inner := errors.Unwrap(err); inner != nil {
			err = inner // drop the "streams: connect to URL" prefix, said below
		}
		return nil, fmt.Errorf("cannot connect to NATS at %s: %w", u, err)
	}
	return &apiClient{Client: api.NewClient(nc), nc: nc, url: u, timeout: c.timeout}, nil
}

// withTimeout bounds a call to the engine; ctx ends on Ctrl-C as well.
func (a *apiClient) withTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, a.timeout)
}

func (a *apiClient) Close() { a.nc.Close() }

// explain turns the errors of a call into what the user can act on. Errors
// from the engine (*api.Error) keep the engine's message.
func (a *apiClient) explain(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, api.ErrNoEngine):
		return fmt.Errorf("no jetbpm engine answered on %s (is 'jetbpm serve' running?)", a.url)
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, nats.ErrTimeout):
		return fmt.Errorf("the jetbpm engine on %s did not answer within %s (--timeout)", a.url, a.timeout)
	case errors.Is(err, context.Canceled):
		return errors.New("interrupted")
	}
	return err
}

// printJSON writes v to stdout as one indented JSON document.
func printJSON(v any) error {
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// printList prints list as a JSON array (never null) or as a table with
// header and one row per item; header and row are tab-separated.
func printList[T any](list []T, asJSON bool, header string, row func(T) string) error {
	if asJSON {
		if list == nil {
			list = []T{}
		}
		return printJSON(list)
	}
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, header)
	for _, item := range list {
		fmt.Fprintln(tw, row(item))
	}
	return tw.Flush()
}

// wantArgs checks that rest holds exactly the positional arguments names.
func wantArgs(cmd string, rest []string, names ...string) error {
	if len(rest) < len(names) {
		return usageErrorf(cmd, "missing %s", names[len(rest)])
	}
	if len(rest) > len(names) {
		return usageErrorf(cmd, "unexpected argument %q", rest[len(names)])
	}
	return nil
}
