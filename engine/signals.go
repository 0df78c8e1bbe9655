package engine

import (
	"context"

	"github.com/jetbpm/jetbpm/engine/signals"
)

// Signal is a broadcast: Name (required), its variables, and its id
// (generated when empty), which makes a repeated broadcast apply once.
type Signal = signals.Signal

// SignalResult is what a broadcast reached: the instances it sent the
// signal to (each applies it to its open catches of the name) and the
// instances its signal start events started.
type SignalResult = signals.Result

// BroadcastSignal broadcasts sig to every open catch of its name, across
// all instances and processes, and starts one instance of each process
// whose latest version has a signal start event of that name
// (docs/signals.md). Nothing is buffered: a catch that opens later does
// not get it. It returns once every event and start is stored.
func (e *Engine) BroadcastSignal(ctx context.Context, sig Signal) (SignalResult, error) {
	return e.signals.Broadcast(ctx, sig)
}
