package engine

import (
	"context"
	"time"

	"github.com/jetbpm/jetbpm/engine/checkpoint"
	"github.com/jetbpm/jetbpm/engine/messages"
	"github.com/jetbpm/jetbpm/engine/timerstarts"
)

// CrashAfterWrite installs a crash hook on opts: after each committed
// checkpoint write the engine asks fn, and true makes the partition behave
// as if the process died right there.
func CrashAfterWrite(opts *Options, fn func(instanceID string) bool) { opts.crashAfterWrite = fn }

// Wrote installs a hook on opts that is told of every checkpoint write of
// an instance partition: the partition, the epoch of the lease it was
// stepped under, the instance and the revision.
func Wrote(opts *Options, fn func(p int, epoch uint64, instanceID string, rev uint64)) {
	opts.wrote = fn
}

// Swept installs a hook on opts that is told the instances each sweep of
// direct creates recovers (p < 0: the sweep when the node opens).
func Swept(opts *Options, fn func(p int, recovered []string)) { opts.swept = fn }

// QuarantineRedelivery sets how long a quarantined instance's events wait
// before they come again.
func QuarantineRedelivery(opts *Options, d time.Duration) { opts.quarantineRedelivery = d }

// HeldBack installs a hook on opts that is told of each instance whose
// events a partition holds back until its committing batch settles.
func HeldBack(opts *Options, fn func(instanceID string)) { opts.heldBack = fn }

// CrashAfterMessageEntryWrite installs a crash hook on opts: after each
// committed write of a message partition entry (key streams.MessageEntryKey)
// the engine asks fn, and true makes the message partition behave as if the
// process died right there.
func CrashAfterMessageEntryWrite(opts *Options, fn func(entryKey string) bool) {
	opts.crashAfterEntryWrite = fn
}

// MessagePartitionsOnly makes an engine run its message partitions and no
// instance partitions, so a test can play the instances' side.
func MessagePartitionsOnly(opts *Options) { opts.messagePartitionsOnly = true }

// TakesNoRoutes makes an engine answer no routed start (route.go), as a
// node of a build before routing.
func TakesNoRoutes(opts *Options) { opts.takesNoRoutes = true }

// MessageEffectMsg is the message an instance's message effect becomes.
var MessageEffectMsg = messages.EffectMsg

// Envelope is the body of a message on the events stream.
type Envelope = checkpoint.Envelope

// StartEnvelope is the start of instance id of version v of processID
// with vars, as Start publishes it.
func StartEnvelope(id, processID string, v int, vars map[string]any) Envelope {
	return checkpoint.Envelope{Instance: id, Start: &checkpoint.StartRequest{ProcessID: processID, Version: v, Vars: vars}}
}

// PublishAnswer publishes m as PublishMessage does and returns the id the
// message partition's answer names.
func PublishAnswer(ctx context.Context, e *Engine, m Message) (string, error) {
	a, err := e.sender.Publish(ctx, m, m.Vars)
	if err != nil {
		return "", err
	}
	return a.ID, nil
}

// PendingReplies returns how many publishes wait for their partition's
// answer.
func PendingReplies(e *Engine) int { return e.sender.Pending() }

// DieBeforeTimerSchedule makes a deploy on an engine opened with opts stop
// after its batch, before it arms its timer starts, as if it died there.
func DieBeforeTimerSchedule(opts *Options) { opts.dieBeforeTimerSchedule = true }

// DieAfterTimerStart makes a timer start fire's handler stop after it
// started instance id, as if it died there, when fn says so.
func DieAfterTimerStart(opts *Options, fn func(id string) bool) { opts.dieAfterTimerStart = fn }

// TimerStartsReconciled is closed once e's start-up reconciliation of the
// timer starts has run.
func TimerStartsReconciled(e *Engine) <-chan struct{} { return e.timers.Reconciled() }

// TimerStartID is the id of the instance the fire of process's version
// due at due starts.
func TimerStartID(process string, version int, due time.Time) string {
	return timerstarts.InstanceID(process, version, due)
}
