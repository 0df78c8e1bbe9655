package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/jetbpm/jetbpm/streams"
)

// usageError is a mistake in the command line: exit code 2.
type usageError struct{ cmd, msg string }

func (e *usageError) Error() string { return e.msg }

func usageErrorf(cmd, format string, args ...any) error {
	return &usageError{cmd: cmd, msg: fmt.Sprintf(format, args...)}
}

// newFlagSet returns an empty flag set for the named command. It prints
// nothing itself: parseArgs reports errors and help.
func newFlagSet(cmd string) *flag.FlagSet {
	fs := flag.NewFlagSet(cmd, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return fs
}

// parseArgs parses args, flags before or after the positional arguments
// ("--" ends the flags), and returns the positional arguments. On -h or
// --help it prints the command's usage to stdout and returns flag.ErrHelp.
func parseArgs(fs *flag.FlagSet, args []string) ([]string, error) {
	if err := fs.Parse(reorderArgs(fs, args)); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			printUsage(os.Stdout, fs)
			return nil, err
		}
		return nil, usageErrorf(fs.Name(), "%v", err)
	}
	return fs.Args(), nil
}

// reorderArgs moves the flags (and the values of non-boolean flags) ahead
// of the positional arguments, so the flag package, which stops at the first
// positional, sees them all. Everything after "--" stays positional; a "--"
// is put between flags and positionals so a positional starting with "-"
// stays one. Unknown flags are kept for fs.Parse to report.
func reorderArgs(fs *flag.FlagSet, args []string) []string {
	var flags, positional []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			positional = append(positional, args[i+1:]...)
			break
		}
		if len(a) < 2 || a[0] != '-' {
			positional = append(positional, a)
			continue
		}
		flags = append(flags, a)
		name := strings.TrimPrefix(a[1:], "-")
		if strings.Contains(name, "=") {
			continue
		}
		f := fs.Lookup(name)
		if f == nil || isBoolFlag(f) {
			continue
		}
		if i+1 == len(args) {
			return flags // the value is missing: fs.Parse reports it
		}
		flags = append(flags, args[i+1])
		i++
	}
	if len(positional) == 0 {
		return flags
	}
	return append(append(flags, "--"), positional...)
}

func isBoolFlag(f *flag.Flag) bool {
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// printUsage prints the command's usage text and its flags.
func printUsage(w io.Writer, fs *flag.FlagSet) {
	if cmd, ok := lookup(fs.Name()); ok {
		fmt.Fprintln(w, cmd.usage)
		if len(cmd.subs) > 0 {
			fmt.Fprint(w, "\ncommands:\n")
			width := 8
			for _, s := range cmd.subs {
				width = max(width, len(s.name)-len(cmd.name)-1)
			}
			for _, s := range cmd.subs {
				fmt.Fprintf(w, "  %-*s %s\n", width, strings.TrimPrefix(s.name, cmd.name+" "), s.summary)
			}
			fmt.Fprintf(w, "\nRun 'jetbpm help %s COMMAND' for the flags of a command.\n", cmd.name)
		}
	}
	first := true
	fs.VisitAll(func(f *flag.Flag) {
		if first {
			fmt.Fprint(w, "\nflags:\n")
			first = false
		}
		placeholder, usage := flag.UnquoteUsage(f)
		line := "  --" + f.Name
		if placeholder != "" {
			line += " " + placeholder
		}
		fmt.Fprintf(w, "%s\n      %s", line, usage)
		if f.DefValue != "" && f.DefValue != "false" && f.DefValue != "0" {
			fmt.Fprintf(w, " (default %s)", f.DefValue)
		}
		fmt.Fprintln(w)
	})
}

// choice is a string flag restricted to a few values.
type choice struct {
	value   string
	allowed []string
}

func (c *choice) String() string { return c.value }

func (c *choice) Set(s string) error {
	for _, a := range c.allowed {
		if s == a {
			c.value = s
			return nil
		}
	}
	return fmt.Errorf("want one of %s", strings.Join(c.allowed, ", "))
}

func envOr(name, fallback string) string {
	if v, ok := os.LookupEnv(name); ok && v != "" {
		return v
	}
	return fallback
}

// defaultNATSURL is where client commands look for NATS by default.
const defaultNATSURL = "nats://127.0.0.1:4222"

// connFlags say how to reach NATS.
type connFlags struct {
	url, creds, user, password string
	inboxPrefix                string
	tlsCA, tlsCert, tlsKey     string
}

// addConnFlags registers the NATS connection flags on fs. defaultURL is
// used when neither --nats-url nor JETBPM_NATS_URL is given. The NATS user
// is --nats-user, and --user as well unless fs has a --user already.
func addConnFlags(fs *flag.FlagSet, defaultURL string) *connFlags {
	c := &connFlags{}
	fs.StringVar(&c.url, "nats-url", envOr("JETBPM_NATS_URL", defaultURL), "NATS server `URLS`, comma-separated (env JETBPM_NATS_URL)")
	fs.StringVar(&c.creds, "creds", os.Getenv("JETBPM_CREDS"), "NATS credentials `FILE` (env JETBPM_CREDS)")
	fs.StringVar(&c.user, "nats-user", os.Getenv("JETBPM_NATS_USER"), "NATS `USER` (env JETBPM_NATS_USER); --user too, unless the command has a --user of its own")
	if fs.Lookup("user") == nil {
		// The task commands' --user is the person acting on the task.
		fs.StringVar(&c.user, "user", os.Getenv("JETBPM_NATS_USER"), "NATS `USER` (env JETBPM_NATS_USER), the same as --nats-user")
	}
	fs.StringVar(&c.password, "password", "", "NATS `PASSWORD`; prefer env JETBPM_NATS_PASSWORD, which ps does not show")
	fs.StringVar(&c.inboxPrefix, "inbox-prefix", os.Getenv("JETBPM_NATS_INBOX_PREFIX"),
		"subject `PREFIX` of the reply inboxes, the one the NATS user may subscribe to (env JETBPM_NATS_INBOX_PREFIX; default _INBOX.USER with --user, else _INBOX)")
	fs.StringVar(&c.tlsCA, "tls-ca", "", "CA certificate `FILE` to verify the NATS server")
	fs.StringVar(&c.tlsCert, "tls-cert", "", "client certificate `FILE` for NATS")
	fs.StringVar(&c.tlsKey, "tls-key", "", "client key `FILE` for NATS")
	return c
}

// config turns the flags into a streams.ConnectConfig; name identifies the
// connection on the server.
func (c *connFlags) config(name string) streams.ConnectConfig {
	password := c.password
	if password == "" {
		password = os.Getenv("JETBPM_NATS_PASSWORD")
	}
	return streams.ConnectConfig{
		URL: c.url, Name: name, CredsFile: c.creds, User: c.user, Password: password, InboxPrefix: c.inboxPrefix,
		TLSCA: c.tlsCA, TLSCert: c.tlsCert, TLSKey: c.tlsKey,
	}
}
