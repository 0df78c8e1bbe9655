package streams

import (
	"context"
	"fmt"
)

// A Syncer makes every write the server acknowledged before the call
// durable (embedded.Server.Sync: a group commit over the store). A
// component that answers a caller, or acknowledges a message whose content
// it moved elsewhere, calls Sync between its writes and that answer, so a
// power cut cannot keep the answer's consequences without its cause.
//
// The nil Syncer does nothing: against an external server, the server's
// own sync policy decides what a power cut keeps (docs/reliability.md).
type Syncer func(ctx context.Context) error

// Sync runs s; a nil s returns nil at once.
func (s Syncer) Sync(ctx context.Context) error {
	if s == nil {
		return nil
	}
	return NotDurable(s(ctx))
}

// NotDurable wraps a failed sync in the error a caller sees; nil stays nil.
func NotDurable(err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("the store's writes could not be made durable, so nothing more is acknowledged: %w", err)
}
