// Package errdefs defines the errors the engine's packages return, so that
// a caller tests them with errors.Is whichever package produced them.
// Package engine re-exports each one (engine.ErrNotFound is
// errdefs.ErrNotFound), as os re-exports io/fs's errors; users need only
// package engine.
package errdefs

import "errors"

// The engine's errors; test with errors.Is.
var (
	// ErrNotFound: no such instance, process, task, incident or job.
	ErrNotFound = errors.New("not found")
	// ErrFinished refuses a command to an instance that has ended.
	ErrFinished = errors.New("instance has finished")
	// ErrInvalid refuses a request that is malformed or names what cannot be.
	ErrInvalid = errors.New("invalid request")
	// ErrTooLarge refuses a variable, document or checkpoint over its limit.
	ErrTooLarge = errors.New("too large")
	// ErrClosed: the engine was closed.
	ErrClosed = errors.New("engine closed")
	// ErrDuplicate refuses a message whose id was published already:
	// within the last two minutes, or while a message with that id is
	// buffered.
	ErrDuplicate = errors.New("duplicate message id")
	// ErrNoSubscription: CorrelateMessage found no subscription (or
	// message start event) for the message.
	ErrNoSubscription = errors.New("no subscription")
	// ErrConflict refuses a claim of a user task another user holds.
	ErrConflict = errors.New("conflict")
)
