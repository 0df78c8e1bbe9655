package streams

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Backups: each stream is saved through JetStream's snapshot API (the
// server writes a compressed archive of the stream's files, checking
// every message's checksum first) into a directory, as two files: the
// stream's configuration and state (<stream>.json) and the archive
// (<stream>.snapshot). Restore sends them back through the restore API.
// See docs/reliability.md, "Backup and restore".

// Jetbpm reports whether name is one of jetbpm's streams or buckets.
func Jetbpm(name string) bool {
	return strings.HasPrefix(name, "JETBPM_") || strings.HasPrefix(name, "KV_jetbpm-")
}

// BackupOrder sorts stream names the way Backup takes them: the streams
// that name instances (jobs, events with the timers, reports, tasks,
// incidents, messages) before the instances bucket, and that bucket
// before the definitions and meta buckets. A trace is written after its
// instance's checkpoint, so every trace in the backup has its checkpoint
// in it too.
func BackupOrder(names []string) []string {
	rank := func(n string) int {
		switch n {
		case KVStream(InstancesBucket):
			return 1
		case KVStream(DefinitionsBucket), KVStream(MetaBucket):
			return 2
		}
		return 0
	}
	out := slices.Clone(names)
	slices.SortStableFunc(out, func(a, b string) int {
		if ra, rb := rank(a), rank(b); ra != rb {
			return ra - rb
		}
		return strings.Compare(a, b)
	})
	return out
}

// snapshotMeta is what <stream>.json holds: the snapshot response.
type snapshotMeta struct {
	Config json.RawMessage `json:"config"`
	State  json.RawMessage `json:"state"`
}

// BackedUp is one stream saved by Backup.
type BackedUp struct {
	Stream string
	Bytes  int64
	Msgs   uint64
}

// Backup saves every jetbpm stream and bucket on the server into dir (made
// if missing; files of the same names are replaced), in BackupOrder, and
// returns what it saved. Each stream's snapshot is a consistent copy of
// that stream at the moment it is taken; the engine may keep running.
func Backup(ctx context.Context, nc *nats.Conn, dir string) ([]BackedUp, error) {
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, err
	}
	var names []string
	list := js.StreamNames(ctx)
	for n := range list.Name() {
		if Jetbpm(n) {
			names = append(names, n)
		}
	}
	if err := list.Err(); err != nil {
		return nil, fmt.Errorf("streams: list streams: %w", err)
	}
	if len(names) == 0 {
		return nil, errors.New("streams: backup: the server holds no jetbpm stream")
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("streams: backup: %w", err)
	}
	var out []BackedUp
	for _, name := range BackupOrder(names) {
		b, err := snapshot(ctx, nc, name, dir)
		if err != nil {
			return out, err
		}
		out = append(out, b)
	}
	return out, nil
}

// snapshot saves stream name into dir.
func snapshot(ctx context.Context, nc *nats.Conn, name, dir string) (BackedUp, error) {
	b := BackedUp{Stream: name}
	inbox := nc.NewInbox()
	sub, err := nc.SubscribeSync(inbox)
	if err != nil {
		return b, err
	}
	defer func() { _ = sub.Unsubscribe() }()
	req, _ := json.Marshal(map[string]any{"deliver_subject": inbox, "jsck": true})
	resp, err := nc.RequestWithContext(ctx, "$JS.API.STREAM.SNAPSHOT."+name, req)
	if err != nil {
		return b, fmt.Errorf("streams: snapshot of %s: %w", name, err)
	}
	var answer struct {
		snapshotMeta
		Error *jetstream.APIError `json:"error"`
	}
	if err := json.Unmarshal(resp.Data, &answer); err != nil {
		return b, fmt.Errorf("streams: snapshot of %s: %w", name, err)
	}
	if answer.Error != nil {
		return b, fmt.Errorf("streams: snapshot of %s: %w", name, answer.Error)
	}
	var state struct {
		Msgs uint64 `json:"messages"`
	}
	_ = json.Unmarshal(answer.State, &state)
	b.Msgs = state.Msgs

	archive := filepath.Join(dir, name+".snapshot")
	f, err := os.Create(archive + ".new")
	if err != nil {
		return b, fmt.Errorf("streams: backup: %w", err)
	}
	defer f.Close()
	for {
		m, err := sub.NextMsgWithContext(ctx)
		if err != nil {
			return b, fmt.Errorf("streams: snapshot of %s: after %d bytes: %w", name, b.Bytes, err)
		}
		if len(m.Data) == 0 {
			// The end: a status 204 when the snapshot is complete.
			if status := m.Header.Get("Status"); status != "" && status != "204" {
				return b, fmt.Errorf("streams: snapshot of %s failed: %s %s", name, status, m.Header.Get("Description"))
			}
			break
		}
		if _, err := f.Write(m.Data); err != nil {
			return b, fmt.Errorf("streams: backup: %w", err)
		}
		b.Bytes += int64(len(m.Data))
		if m.Reply != "" {
			if err := nc.Publish(m.Reply, nil); err != nil { // the flow control ack
				return b, err
			}
		}
	}
	if err := f.Sync(); err != nil {
		return b, fmt.Errorf("streams: backup: %w", err)
	}
	if err := f.Close(); err != nil {
		return b, fmt.Errorf("streams: backup: %w", err)
	}
	meta, _ := json.MarshalIndent(answer.snapshotMeta, "", "  ")
	if err := os.WriteFile(filepath.Join(dir, name+".json"), meta, 0o600); err != nil {
		return b, fmt.Errorf("streams: backup: %w", err)
	}
	if err := os.Rename(archive+".new", archive); err != nil {
		return b, fmt.Errorf("streams: backup: %w", err)
	}
	return b, nil
}

// Restore sends every stream saved in dir back to the server. A stream
// that exists is refused unless replace, which deletes it first: restore
// into a store no engine runs on (its streams would change under it).
func Restore(ctx context.Context, nc *nats.Conn, dir string, replace bool) ([]BackedUp, error) {
	metas, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, err
	}
	var names []string
	for _, m := range metas {
		if n := strings.TrimSuffix(filepath.Base(m), ".json"); Jetbpm(n) {
			names = append(names, n)
		}
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("streams: restore: %s holds no backup of a jetbpm stream", dir)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, err
	}
	var out []BackedUp
	for _, name := range BackupOrder(names) {
		if _, err := js.Stream(ctx, name); err == nil {
			if !replace {
				return out, fmt.Errorf("streams: restore: stream %s exists; restore into an empty store, or replace it (no engine may run on it)", name)
			}
			if err := js.DeleteStream(ctx, name); err != nil {
				return out, fmt.Errorf("streams: restore: delete %s: %w", name, err)
			}
		} else if !errors.Is(err, jetstream.ErrStreamNotFound) {
			return out, fmt.Errorf("streams: restore: %s: %w", name, err)
		}
		b, err := restore(ctx, nc, name, dir)
		if err != nil {
			return out, err
		}
		out = append(out, b)
	}
	return out, nil
}

// restoreChunk is how much of an archive one restore message carries.
const restoreChunk = 128 << 10

// restore sends stream name's files in dir to the server.
func restore(ctx context.Context, nc *nats.Conn, name, dir string) (BackedUp, error) {
	b := BackedUp{Stream: name}
	raw, err := os.ReadFile(filepath.Join(dir, name+".json"))
	if err != nil {
		return b, fmt.Errorf("streams: restore: %w", err)
	}
	var meta snapshotMeta
	if err := json.Unmarshal(raw, &meta); err != nil || meta.Config == nil || meta.State == nil {
		return b, fmt.Errorf("streams: restore: %s.json is not a snapshot's description (%v)", name, err)
	}
	f, err := os.Open(filepath.Join(dir, name+".snapshot"))
	if err != nil {
		return b, fmt.Errorf("streams: restore: %w", err)
	}
	defer f.Close()
	resp, err := nc.RequestWithContext(ctx, "$JS.API.STREAM.RESTORE."+name, raw)
	if err != nil {
		return b, fmt.Errorf("streams: restore of %s: %w", name, err)
	}
	var answer struct {
		DeliverSubject string              `json:"deliver_subject"`
		Error          *jetstream.APIError `json:"error"`
	}
	if err := json.Unmarshal(resp.Data, &answer); err != nil {
		return b, fmt.Errorf("streams: restore of %s: %w", name, err)
	}
	if answer.Error != nil {
		return b, fmt.Errorf("streams: restore of %s: %w", name, answer.Error)
	}
	chunk := make([]byte, restoreChunk)
	for {
		n, err := io.ReadFull(f, chunk)
		if n > 0 {
			// Each chunk waits for the server's answer: its flow control.
			r, rerr := nc.RequestWithContext(ctx, answer.DeliverSubject, chunk[:n])
			if rerr != nil {
				return b, fmt.Errorf("streams: restore of %s: after %d bytes: %w", name, b.Bytes, rerr)
			}
			if err := apiError(r.Data); err != nil {
				return b, fmt.Errorf("streams: restore of %s: after %d bytes: %w", name, b.Bytes, err)
			}
			b.Bytes += int64(n)
		}
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			break
		}
		if err != nil {
			return b, fmt.Errorf("streams: restore: %w", err)
		}
	}
	// An empty message ends the upload; the answer is the stream's info.
	r, err := nc.RequestWithContext(ctx, answer.DeliverSubject, nil)
	if err != nil {
		return b, fmt.Errorf("streams: restore of %s: finishing: %w", name, err)
	}
	var done struct {
		State struct {
			Msgs uint64 `json:"messages"`
		} `json:"state"`
		Error *jetstream.APIError `json:"error"`
	}
	if err := json.Unmarshal(r.Data, &done); err != nil {
		return b, fmt.Errorf("streams: restore of %s: finishing: %w", name, err)
	}
	if done.Error != nil {
		return b, fmt.Errorf("streams: restore of %s: %w", name, done.Error)
	}
	b.Msgs = done.State.Msgs
	return b, nil
}

// apiError returns the error a JetStream API answer holds, nil for an
// empty answer or one without an error.
func apiError(data []byte) error {
	if len(data) == 0 {
		return nil
	}
	var a struct {
		Error *jetstream.APIError `json:"error"`
	}
	if json.Unmarshal(data, &a) == nil && a.Error != nil {
		return a.Error
	}
	return nil
}
