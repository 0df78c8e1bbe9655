package streams

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Unavailable reports whether err says JetStream did not answer, or
// answered that it cannot serve right now: what a cluster does for seconds
// while it elects leaders after a node died, or while a restarted node
// catches up. Such a request is worth repeating; any other error (a refused
// configuration, a server without JetStream) is not.
func Unavailable(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout) ||
		errors.Is(err, nats.ErrNoResponders) || errors.Is(err, jetstream.ErrNoStreamResponse) {
		return true
	}
	var apiErr *jetstream.APIError
	if !errors.As(err, &apiErr) {
		return false
	}
	if apiErr.ErrorCode == jsErrCodeNoPeers {
		// A placement that failed because a peer is offline (a cluster
		// that lost quorum) succeeds once it is back; one that failed for
		// want of storage, tags or enough nodes does not.
		return strings.Contains(apiErr.Description, "offline")
	}
	if apiErr.Code != http.StatusServiceUnavailable {
		return false
	}
	// Also a 503, but it will not change by asking again.
	return apiErr.ErrorCode != jetstream.JSErrCodeJetStreamNotEnabled &&
		apiErr.ErrorCode != jetstream.JSErrCodeJetStreamNotEnabledForAccount
}

// jsErrCodeNoPeers is the server's "no suitable peers for placement".
const jsErrCodeNoPeers jetstream.ErrorCode = 10005
