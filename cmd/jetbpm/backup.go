package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"text/tabwriter"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetbpm/jetbpm/engine/storecheck"
	"github.com/jetbpm/jetbpm/streams"
	"github.com/jetbpm/jetbpm/streams/embedded"
)

const backupUsage = `usage: jetbpm backup [flags] DIR

Saves every jetbpm stream and bucket on the NATS server into DIR, through
JetStream's snapshot API: for each stream its configuration and state
(STREAM.json) and a compressed archive of its files (STREAM.snapshot). The
server checks every message's checksum as it writes the archive. serve
may keep running: each stream is copied as it is at one moment, the
streams that name instances (jobs, timers, tasks, incidents) before the
instances bucket, so every job or timer in the backup has its instance in
it too. Prints each stream with its messages and bytes. Restore with
'jetbpm restore' (docs/reliability.md, "Backup and restore").`

const restoreUsage = `usage: jetbpm restore [flags] DIR

Restores the streams and buckets saved by 'jetbpm backup' in DIR. With
--data, into the store of 'jetbpm serve --data' in that directory, which
serve must not be running on (its data directory lock says so); without,
into the NATS server of --nats-url, on which no engine may run. A stream
that exists is refused unless --replace, which deletes it first. The
store's high-water marks are then set to the restored streams, so the
next start does not count the restore as a loss. Start serve afterwards:
every instance continues from where the backup found it.`

func runBackup(ctx context.Context, args []string) error {
	const name = "backup"
	fs := newFlagSet(name)
	conn := addConnFlags(fs, defaultNATSURL)
	timeout := fs.Duration("timeout", 10*time.Minute, "give up after `DURATION`")
	rest, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if err := wantArgs(name, rest, "DIR"); err != nil {
		return err
	}
	nc, err := dialNATS(conn, name)
	if err != nil {
		return err
	}
	defer nc.Close()
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	saved, err := streams.Backup(ctx, nc, rest[0])
	if err != nil {
		return err
	}
	return printStreams(saved)
}

func runRestore(ctx context.Context, args []string) error {
	const name = "restore"
	fs := newFlagSet(name)
	conn := addConnFlags(fs, defaultNATSURL)
	data := fs.String("data", "", "restore into the embedded store of 'jetbpm serve --data `DIR`' (serve stopped)")
	replace := fs.Bool("replace", false, "delete a stream that exists before restoring it")
	timeout := fs.Duration("timeout", 10*time.Minute, "give up after `DURATION`")
	rest, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if err := wantArgs(name, rest, "DIR"); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	var nc *nats.Conn
	marksFile := ""
	if *data != "" {
		if err := os.MkdirAll(*data, 0o750); err != nil {
			return fmt.Errorf("data directory: %w", err)
		}
		release, err := lockDataDir(*data)
		if err != nil {
			return err
		}
		defer release()
		srv, err := embedded.Start(embedded.Config{StoreDir: filepath.Join(*data, "nats"), NoListen: true})
		if err != nil {
			return err
		}
		defer srv.Shutdown()
		if nc, err = srv.Connect(nats.Name("jetbpm restore")); err != nil {
			return err
		}
		marksFile = filepath.Join(*data, "jetbpm-marks")
	} else if nc, err = dialNATS(conn, name); err != nil {
		return err
	}
	defer nc.Close()
	restored, err := streams.Restore(ctx, nc, rest[0], *replace)
	if err != nil {
		return err
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	meta, err := js.KeyValue(ctx, streams.MetaBucket)
	if err != nil {
		return fmt.Errorf("the restored store has no bucket %s: %w", streams.MetaBucket, err)
	}
	if err := storecheck.New(storecheck.Config{JS: js, Meta: meta, MarksFile: marksFile}).Reset(ctx); err != nil {
		return fmt.Errorf("restored, but the marks could not be set; the next start reports the streams as gone back: %w", err)
	}
	return printStreams(restored)
}

// dialNATS connects to NATS for a command that uses no engine API.
func dialNATS(conn *connFlags, cmd string) (*nats.Conn, error) {
	cf := &clientFlags{conn: conn, timeout: defaultRequestTimeout}
	c, err := cf.dial(cmd)
	if err != nil {
		return nil, err
	}
	return c.nc, nil
}

// printStreams prints what a backup or restore moved.
func printStreams(list []streams.BackedUp) error {
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "STREAM\tMESSAGES\tBYTES")
	for _, b := range list {
		fmt.Fprintf(tw, "%s\t%d\t%d\n", b.Stream, b.Msgs, b.Bytes)
	}
	return tw.Flush()
}
