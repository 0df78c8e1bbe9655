package streams

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Signals (docs/signals.md) and timer start events (docs/timerstart.md).
const (
	// SignalsStream takes signal broadcasts on SignalSubject, from
	// integrations and from the engine's own throws (work-queue
	// retention). Like MessagesStream it refuses rollups, schedules,
	// per-message TTLs and purges: a publisher's headers forge nothing.
	SignalsStream = "JETBPM_SIGNALS"
	// SignalsBucket indexes the open signal subscriptions by name
	// (SignalKey), so a broadcast lists the waits of its name without
	// loading any instance.
	SignalsBucket = "jetbpm-signals"
	// SignalsConsumer is the durable pull consumer every engine node
	// takes broadcasts from (shared, not pinned: a broadcast is
	// idempotent).
	SignalsConsumer = "signals"

	// TimerStartsStream holds the schedule of each process's timer start
	// event (TimerStartSchedule), the fires it makes
	// (TimerStartFireSubject) and the record of each process's last fire
	// (TimerStartRecord), work-queue retention.
	TimerStartsStream = "JETBPM_TIMER_STARTS"
	// TimerStartsConsumer is the durable pull consumer of the fires,
	// shared by every engine node.
	TimerStartsConsumer = "timer-starts"
)

const (
	signalsRoot       = "jetbpm.s"
	signalBroadcast   = signalsRoot + ".broadcast"
	timerStartRoot    = "jetbpm.ts"
	timerStartFires   = "jetbpm.tsf"
	signalStartPrefix = "sigstart."
)

// SignalSubjects matches every signal broadcast: the stream's subject and
// the one publish permission an integration needs for signals.
const SignalSubjects = signalBroadcast + ".*"

// SignalSubject is where a broadcast of signal name is published:
// jetbpm.s.broadcast.<token(name)>. The body is the signal's variables;
// Nats-Msg-Id, if set, is the broadcast's id.
func SignalSubject(name string) string { return signalBroadcast + "." + Token(name) }

// SignalName returns the signal name of a subject SignalSubject made. A
// token not escaped exactly as Token escapes is refused.
func SignalName(subject string) (string, error) {
	tok, ok := strings.CutPrefix(subject, signalBroadcast+".")
	if !ok || tok == "" || strings.Contains(tok, ".") {
		return "", fmt.Errorf("subject %q is not a signal broadcast (%s.<name>)", subject, signalBroadcast)
	}
	name, err := Untoken(tok)
	if err != nil {
		return "", fmt.Errorf("subject %q: %w", subject, err)
	}
	if Token(name) != tok {
		return "", fmt.Errorf("subject %q: name token %q is not escaped as jetbpm escapes it (want %q)", subject, tok, Token(name))
	}
	return name, nil
}

// SignalKey is the key, in SignalsBucket, of the open signal wait wait of
// instance, catching signal name.
func SignalKey(name, instance, wait string) string {
	return Token(name) + "." + Token(instance) + "." + Token(wait)
}

// SignalKeys matches the index entries of signal name.
func SignalKeys(name string) string { return Token(name) + ".>" }

// ParseSignalKey returns the instance and the wait of a SignalKey.
func ParseSignalKey(key string) (instance, wait string, err error) {
	parts := strings.Split(key, ".")
	if len(parts) != 3 {
		return "", "", fmt.Errorf("signal index key %q is not <name>.<instance>.<wait>", key)
	}
	if instance, err = Untoken(parts[1]); err == nil {
		wait, err = Untoken(parts[2])
	}
	return instance, wait, err
}

// SignalStartKey is the key, in DefinitionsBucket, of the index of the
// signal start events of signal name (the latest versions only).
func SignalStartKey(name string) string { return signalStartPrefix + Token(name) }

// TimerStartSchedule is the subject of the schedule of process's timer
// start event: one per process, so a new schedule replaces the old.
func TimerStartSchedule(process string) string { return timerStartRoot + "." + Token(process) }

// TimerStartRecord is the subject of the last word on process's timer
// start: the fire a deploy armed, or the last fire a handler took.
func TimerStartRecord(process string) string { return timerStartRoot + ".last." + Token(process) }

// TimerStartFireSubject is where process's timer start schedule fires.
func TimerStartFireSubject(process string) string { return timerStartFires + "." + Token(process) }

// TimerStartFires matches every fire of a timer start schedule.
const TimerStartFires = timerStartFires + ".>"

// provisionSignals creates the signals stream, its consumer and the
// index bucket, and the timer starts stream and its consumer.
func provisionSignals(ctx context.Context, js jetstream.JetStream, cfg Config, log *slog.Logger) error {
	err := ensureStream(ctx, js, SignalsStream, func(c *jetstream.StreamConfig) {
		c.Subjects = []string{SignalSubjects}
		c.Retention = jetstream.WorkQueuePolicy
		c.AllowRollup, c.AllowMsgSchedules, c.AllowMsgTTL = false, false, false
		c.DenyPurge, c.DenyDelete = true, true
		c.Duplicates = dupWindow
		c.Storage, c.Replicas = cfg.Storage, cfg.Replicas
	}, log)
	if err != nil {
		return err
	}
	shared := func(filter string) func(*jetstream.ConsumerConfig) {
		return func(c *jetstream.ConsumerConfig) {
			c.FilterSubjects = nil
			c.FilterSubject = filter
			c.AckPolicy = jetstream.AckExplicitPolicy
			c.AckWait = cfg.EventAckWait
			c.MaxDeliver = -1
		}
	}
	if err := ensureConsumer(ctx, js, SignalsStream, SignalsConsumer, shared(SignalSubjects), log); err != nil {
		return err
	}
	err = ensureStream(ctx, js, TimerStartsStream, func(c *jetstream.StreamConfig) {
		c.Subjects = []string{timerStartRoot + ".>", TimerStartFires}
		c.Retention = jetstream.WorkQueuePolicy
		c.AllowMsgSchedules = true
		c.AllowRollup = true // schedules need it; set so the server's config compares equal
		c.DenyPurge = false  // a redeploy without a timer start purges its schedule
		c.Duplicates = dupWindow
		c.Storage, c.Replicas = cfg.Storage, cfg.Replicas
	}, log)
	if err != nil {
		return err
	}
	if err := ensureConsumer(ctx, js, TimerStartsStream, TimerStartsConsumer, shared(TimerStartFires), log); err != nil {
		return err
	}
	_, err = ensureKV(ctx, js, SignalsBucket, func(c *jetstream.KeyValueConfig) {
		c.History = 1
		c.LimitMarkerTTL = time.Second // a deleted entry's marker expires
		c.Storage, c.Replicas = cfg.Storage, cfg.Replicas
	}, log)
	return err
}
