package streams

import (
	"errors"

	"github.com/nats-io/nats.go/jetstream"
)

// IsConflict reports whether a write lost a compare-and-set: a KV Create
// of a key that exists, an Update or Delete at a revision the key has
// moved on from, or a publish whose expected last (subject) sequence no
// longer holds. The server says so with two codes: 10071 from a stream of
// one replica, 10164 from a replicated one (the Raft leader checks the
// expectation, and answers with its own code). Test for both, never for
// jetstream.ErrKeyExists alone: that matches only 10071.
func IsConflict(err error) bool {
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && (apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence ||
		apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant)
}
