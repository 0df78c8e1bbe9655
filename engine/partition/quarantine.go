package partition

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jetbpm/jetbpm/engine/errdefs"
	"github.com/jetbpm/jetbpm/jobs"
	"github.com/jetbpm/jetbpm/streams"
)

// DefaultQuarantineRedelivery is how long the events of a quarantined
// instance wait before they are offered again (Config.QuarantineRedelivery):
// an instance whose checkpoint is damaged is not stepped, and its events
// are never dropped (they are what it still has to do once its checkpoint
// is restored), so they come back this rarely rather than every 250 ms.
const DefaultQuarantineRedelivery = 30 * time.Second

// KeepBack is how long the job of a lost instance is kept back before it
// is delivered again (Config.LostJob): it is the evidence of what the
// instance was doing, and a worker should not run it while its damage
// record is open.
const KeepBack = time.Hour

func (c *Config) quarantineRedelivery() time.Duration {
	if c.QuarantineRedelivery > 0 {
		return c.QuarantineRedelivery
	}
	return DefaultQuarantineRedelivery
}

// definitionError is a step that could not read its instance's process
// definition.
type definitionError struct{ err error }

func (e *definitionError) Error() string { return "process definition: " + e.err.Error() }
func (e *definitionError) Unwrap() error { return e.err }

// unreadableDefinition reports whether err is a step that found its
// instance's process definition missing or damaged: definitions are never
// deleted, so the store lost or damaged it, and the instance is
// quarantined rather than failed.
func unreadableDefinition(err error) bool {
	var de *definitionError
	return errors.As(err, &de) && (errors.Is(err, errdefs.ErrNotFound) || damaged(err))
}

// damaged reports whether err says an instance's checkpoint is damaged
// (its checksum does not match): the instance is quarantined.
func damaged(err error) bool { return errors.Is(err, streams.ErrDamaged) }

// quarantine holds back instance id, whose checkpoint cannot be read for
// cause: the first time, the engine is told (Config.Damaged: a record and
// an ERROR line), then its events wait (Config.QuarantineRedelivery). Every other
// instance of the partition goes on. Called from the loop only.
func (p *Partition) quarantine(ctx context.Context, id string, cause error) {
	if p.quarantined[id] {
		return
	}
	p.quarantined[id] = true
	p.log.Error("instance quarantined: its checkpoint or its process definition is damaged or gone; its events are held until it is restored (see jetbpm store check)",
		"instance", id, "err", cause)
	if p.cfg.Damaged != nil {
		p.cfg.Damaged(ctx, id, cause)
	}
}

// release lets instance id, quarantined before, step again: its
// checkpoint and its definition read whole now (restored). Called from
// the loop only.
func (p *Partition) release(ctx context.Context, id string) {
	if !p.quarantined[id] {
		return
	}
	delete(p.quarantined, id)
	p.log.Info("instance out of quarantine: its checkpoint reads whole again", "instance", id)
	if p.cfg.Restored != nil {
		p.cfg.Restored(ctx, id)
	}
}

// hold keeps the messages of quarantined group g for later and tells each
// worker whose report it holds so, so that the worker does not wait for a
// verdict until its lock expires: the report is kept, and applied once the
// checkpoint is restored (the job itself is left alone: when its lock
// expires it is delivered again).
func (p *Partition) hold(g *group) {
	for _, m := range g.msgs {
		_ = m.NakWithDelay(p.cfg.quarantineRedelivery())
	}
	held := &group{}
	for _, rep := range g.reports {
		held.actions = append(held.actions, jobAction{replyTo: rep.r.ReplyTo, verdict: jobs.Verdict{
			JobID: rep.r.JobID, Kind: rep.r.Kind,
			Reason: fmt.Sprintf("instance %s is quarantined (its checkpoint or its process definition is damaged): the report is kept and applied once it is restored", g.id),
		}})
	}
	p.sendJobActions(held)
}
