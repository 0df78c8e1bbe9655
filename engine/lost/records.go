package lost

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// A Trace is something in the store that names an instance: a job in the
// queue, a timer's schedule, an open user task, an open incident. Each
// exists only while its instance does, so a trace whose instance has no
// checkpoint is evidence that the checkpoint was lost.
type Trace struct {
	Instance string `msgpack:"instance" json:"instance"`
	// Source is what the trace is: "job", "timer", "task" or "incident".
	Source string `msgpack:"source" json:"source"`
	// ID names the trace within its source: a job's id, a timer's wait, a
	// task's or an incident's id.
	ID string `msgpack:"id" json:"id"`
	// At is when the trace was written; zero when unknown.
	At time.Time `msgpack:"at,omitempty" json:"at,omitzero"`
	// What the trace knows of its instance, where it knows it.
	Process string         `msgpack:"process,omitempty" json:"process,omitempty"`
	Version int            `msgpack:"version,omitempty" json:"version,omitempty"`
	Element string         `msgpack:"element,omitempty" json:"element,omitempty"`
	Vars    map[string]any `msgpack:"vars,omitempty" json:"vars,omitempty"`
}

func (t Trace) String() string { return t.Source + " " + t.ID }

// Orphans returns the traces whose instance has no checkpoint (exists
// says whether it has), grouped by instance. A trace written before
// notBefore is left out: a finished instance's checkpoint expires after
// its retention, and a trace it left behind (a timer never cancelled)
// proves nothing then. A zero At is always counted.
func Orphans(traces []Trace, exists func(id string) bool, notBefore time.Time) map[string][]Trace {
	out := map[string][]Trace{}
	known := map[string]bool{}
	for _, t := range traces {
		if !t.At.IsZero() && t.At.Before(notBefore) {
			continue
		}
		there, seen := known[t.Instance]
		if !seen {
			there = exists(t.Instance)
			known[t.Instance] = there
		}
		if !there {
			out[t.Instance] = append(out[t.Instance], t)
		}
	}
	return out
}

// Kind is what a Record is about.
type Kind string

const (
	// Instance: an instance named by the store's traces has no checkpoint.
	Instance Kind = "instance"
	// Damaged: an instance's checkpoint is there but cannot be read (its
	// checksum does not match, or it does not decode), or its process
	// definition is damaged or gone.
	Damaged Kind = "damaged"
	// Stream: a stream's last sequence went below its mark.
	Stream Kind = "stream"
	// Definition: a process has stored versions but no latest version
	// pointer (its new starts fail as not deployed), or instances of it
	// are stored but no version of it is.
	Definition Kind = "definition"
	// Wait: a living instance waits on a job or a timer the store lost
	// (its job queue or its timer schedules); the check put it back.
	Wait Kind = "wait"
)

// Status is where a Record stands.
type Status string

const (
	// Open: nobody acted on it yet; the store is degraded while one is.
	Open Status = "open"
	// Dismissed: an operator closed it with a reason.
	Dismissed Status = "dismissed"
	// Restored: the instance's checkpoint is back (a restore from backup).
	Restored Status = "restored"
	// Recreated: a new instance was started in its place.
	Recreated Status = "recreated"
	// Rearmed: the check queued the lost job, or scheduled the lost
	// timer, again (a Wait record is written so).
	Rearmed Status = "rearmed"
)

// A Record is one piece of detected damage, kept in the lost bucket until
// an operator acts on it (docs/reliability.md).
type Record struct {
	Kind Kind `msgpack:"kind" json:"kind"`
	// Instance is the lost or damaged instance (Instance, Damaged).
	Instance string `msgpack:"instance,omitempty" json:"instance,omitempty"`
	// What is known of it, from the traces: its process and version, the
	// element it was last known at and the variables a trace held.
	Process string         `msgpack:"process,omitempty" json:"process,omitempty"`
	Version int            `msgpack:"version,omitempty" json:"version,omitempty"`
	Element string         `msgpack:"element,omitempty" json:"element,omitempty"`
	Vars    map[string]any `msgpack:"vars,omitempty" json:"vars,omitempty"`
	// Traces are the evidence: what in the store still names the instance.
	Traces []Trace `msgpack:"traces,omitempty" json:"traces,omitempty"`
	// Gap is the stream that went back (Stream).
	Gap *Gap `msgpack:"gap,omitempty" json:"gap,omitempty"`
	// Wait is the wait whose job or timer was lost (Wait): its id as a
	// subject token.
	Wait string `msgpack:"wait,omitempty" json:"wait,omitempty"`
	// Detail says what was found, in words.
	Detail   string    `msgpack:"detail" json:"detail"`
	Detected time.Time `msgpack:"detected" json:"detected"`
	Status   Status    `msgpack:"status" json:"status"`
	// Reason and Closed are set when an operator acts on it.
	Reason string    `msgpack:"reason,omitempty" json:"reason,omitempty"`
	Closed time.Time `msgpack:"closed,omitempty" json:"closed,omitzero"`
}

// Key is the record's key in the lost bucket: one record per instance,
// one per stream gap (a stream and the sequence it went back to).
func (r *Record) Key() string {
	switch r.Kind {
	case Stream:
		return fmt.Sprintf("stream.%s.%d", r.Gap.Stream, r.Gap.Found)
	case Definition:
		return "definition." + r.Process
	case Wait:
		return "wait." + r.Instance + "." + r.Wait
	default:
		return "instance." + r.Instance
	}
}

// InstanceRecord returns the open record of instance id, lost with traces
// left: what it knew comes from the most recent trace that knew it.
func InstanceRecord(id string, traces []Trace, now time.Time) Record {
	traces = slices.Clone(traces)
	slices.SortStableFunc(traces, func(a, b Trace) int { return b.At.Compare(a.At) })
	r := Record{Kind: Instance, Instance: id, Traces: traces, Detected: now, Status: Open}
	for _, t := range traces {
		if r.Process == "" && t.Process != "" {
			r.Process, r.Version = t.Process, t.Version
		}
		if r.Element == "" && t.Element != "" {
			r.Element = t.Element
		}
		if r.Vars == nil && t.Vars != nil {
			r.Vars = maps.Clone(t.Vars)
		}
	}
	names := make([]string, len(traces))
	for i, t := range traces {
		names[i] = t.String()
	}
	r.Detail = fmt.Sprintf("instance %s has no checkpoint, but the store still names it: %s", id, strings.Join(names, ", "))
	return r
}

// DamagedRecord returns the open record of instance id that cannot be
// stepped for cause: its checkpoint, or its process definition, is
// damaged or gone.
func DamagedRecord(id string, cause error, now time.Time) Record {
	return Record{Kind: Damaged, Instance: id, Detected: now, Status: Open,
		Detail: fmt.Sprintf("instance %s cannot be stepped, its state is damaged: %v", id, cause)}
}

// WentBackRecord returns the record of instance id whose checkpoint the
// store took back under a running node, from revision wrote to found (0:
// none left), and whose node wrote its own copy back: closed as restored.
func WentBackRecord(id string, wrote, found uint64, now time.Time) Record {
	held := fmt.Sprintf("revision %d", found)
	if found == 0 {
		held = "nothing"
	}
	return Record{Kind: Damaged, Instance: id, Detected: now, Status: Restored, Closed: now,
		Reason: "the node that wrote it wrote its copy back",
		Detail: fmt.Sprintf("the checkpoint of instance %s went back under a running node: it wrote revision %d, the store then held %s (it lost acknowledged writes); the node's copy was written back. Other streams may have lost their tails too: the store check that followed says", id, wrote, held)}
}

// PointerRecord returns the open record of process, whose latest version
// pointer is gone (damage nil) or cannot be read (its token as it appears
// in the definitions' keys).
func PointerRecord(process string, now time.Time, damage error) Record {
	what := "no latest-version pointer"
	if damage != nil {
		what = fmt.Sprintf("a latest-version pointer that cannot be read (%v)", damage)
	}
	return Record{Kind: Definition, Process: process, Detected: now, Status: Open,
		Detail: fmt.Sprintf("process %s has deployed versions but %s: its new starts fail as not deployed; deploy its BPMN again, or restore", process, what)}
}

// DefinitionRecord returns the open record of process, which instances
// are of but of which no version is stored.
func DefinitionRecord(process string, now time.Time) Record {
	return Record{Kind: Definition, Process: process, Detected: now, Status: Open,
		Detail: fmt.Sprintf("process %s: instances of it are stored but no version of it is: they cannot step (quarantined when they do); deploy its BPMN again, or restore", process)}
}

// WaitRecord returns the record of a job or timer (what, "job <id> on
// topic <t>" or "timer") of wait of instance id at element, of process
// version, that the store lost and the check put back: written rearmed.
func WaitRecord(id, process string, version int, element, wait, what string, now time.Time) Record {
	return Record{Kind: Wait, Instance: id, Process: process, Version: version, Element: element, Wait: wait,
		Detected: now, Status: Rearmed, Closed: now, Reason: "put back by the store check",
		Detail: fmt.Sprintf("instance %s waits at %s on %s, which the store lost: put back", id, element, what)}
}

// GapRecord returns the open record of a stream that went back.
func GapRecord(g Gap, now time.Time) Record {
	return Record{Kind: Stream, Gap: &g, Detected: now, Status: Open, Detail: g.String()}
}

// Summary says in one line what the open records among recs are, for a
// health check: "" when none is open.
func Summary(recs []Record) string {
	var instances, damaged, streams, processes []string
	for _, r := range recs {
		if r.Status != Open {
			continue
		}
		switch r.Kind {
		case Instance:
			instances = append(instances, r.Instance)
		case Damaged:
			damaged = append(damaged, r.Instance)
		case Stream:
			streams = append(streams, r.Gap.Stream)
		case Definition:
			processes = append(processes, r.Process)
		}
	}
	var parts []string
	if n := len(instances); n > 0 {
		parts = append(parts, fmt.Sprintf("%d lost instance(s) (%s)", n, sample(instances)))
	}
	if n := len(damaged); n > 0 {
		parts = append(parts, fmt.Sprintf("%d damaged checkpoint(s) (%s)", n, sample(damaged)))
	}
	if n := len(streams); n > 0 {
		parts = append(parts, fmt.Sprintf("%d stream(s) went back (%s)", n, sample(streams)))
	}
	if n := len(processes); n > 0 {
		parts = append(parts, fmt.Sprintf("%d process(es) lost definitions (%s)", n, sample(processes)))
	}
	if len(parts) == 0 {
		return ""
	}
	return "store damaged: " + strings.Join(parts, "; ") + "; see jetbpm store check"
}

// sample names the first few of names, sorted.
func sample(names []string) string {
	slices.SortFunc(names, cmp.Compare)
	names = slices.Compact(names)
	if len(names) > 3 {
		return strings.Join(names[:3], ", ") + fmt.Sprintf(" and %d more", len(names)-3)
	}
	return strings.Join(names, ", ")
}
