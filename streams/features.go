package streams

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// MinServerVersion is the oldest nats-server jetbpm runs on. v2.12.0 added
// the stream option AllowMsgSchedules and one-shot "@at" schedules (durable
// timers) together with atomic batch publish; nats-server's
// jetstream_versioning.go marks all of them "added in v2.12" at JetStream API
// level 2. Per-message TTL and pinned priority groups came earlier (v2.11,
// API level 1), so 2.12.0 is the binding minimum.
const MinServerVersion = "2.12.0"

// minAPILevel is the JetStream API level of MinServerVersion. A cluster
// reports it from the meta leader, which catches an old server behind a new
// one we happened to connect to.
const minAPILevel = 2

// ErrServerUnsupported matches (errors.Is) CheckServer's errors when the
// server lacks what jetbpm needs, as opposed to a failed request.
var ErrServerUnsupported = errors.New("unsupported nats-server")

// unsupportedError carries a full sentence for the operator and still
// matches ErrServerUnsupported.
type unsupportedError struct{ msg string }

func (e *unsupportedError) Error() string        { return e.msg }
func (e *unsupportedError) Is(target error) bool { return target == ErrServerUnsupported }

func unsupported(format string, args ...any) error {
	prefix := fmt.Sprintf("jetbpm needs nats-server >= %s with JetStream enabled; ", MinServerVersion)
	return &unsupportedError{msg: prefix + fmt.Sprintf(format, args...)}
}

// CheckServer verifies that the server behind nc has JetStream enabled for
// this account and is at least MinServerVersion. Call it once after
// connecting with --nats-url; the error names the required version and what
// the server runs.
func CheckServer(ctx context.Context, nc *nats.Conn) error {
	where := nc.ConnectedUrlRedacted()
	switch {
	case nc.Opts.InProcessServer != nil: // its URL is a meaningless default
		where = "the in-process nats-server"
	case where == "":
		where = "the connected server"
	}
	if err := checkVersion(where, nc.ConnectedServerVersion()); err != nil {
		return err
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return fmt.Errorf("streams: %w", err)
	}
	info, err := js.AccountInfo(ctx)
	if err != nil {
		if !errors.Is(err, jetstream.ErrJetStreamNotEnabled) && !errors.Is(err, jetstream.ErrJetStreamNotEnabledForAccount) {
			return fmt.Errorf("streams: read JetStream account info from %s: %w", where, err)
		}
		return unsupported("%s runs %s without JetStream for this account (%v)", where, nc.ConnectedServerVersion(), err)
	}
	if info.API.Level < minAPILevel {
		return unsupported("%s reports JetStream API level %d, not %d: a server in the cluster runs a version older than %s",
			where, info.API.Level, minAPILevel, MinServerVersion)
	}
	return nil
}

// checkVersion compares a server's reported version with MinServerVersion.
func checkVersion(where, got string) error {
	need, err := parseVersion(MinServerVersion)
	if err != nil {
		panic("streams: MinServerVersion: " + err.Error())
	}
	have, err := parseVersion(got)
	if err != nil {
		return unsupported("%s reports a version that cannot be read: %v", where, err)
	}
	if have.compare(need) < 0 {
		return unsupported("%s runs %s", where, got)
	}
	return nil
}
