package checkpoint

import (
	"fmt"
	"strconv"

	"github.com/nats-io/nats.go"

	"github.com/jetbpm/jetbpm/engine/instance"
)

// The headers a checkpoint message carries besides its value: a summary of
// the instance, written in the same message as the checkpoint, so it can
// never disagree with it. The instance index reads only these (a
// headers-only consumer), never a checkpoint's value.
const (
	HeaderProcess = "Jetbpm-Process"
	HeaderStatus  = "Jetbpm-Status"  // Status of the instance
	HeaderStarted = "Jetbpm-Started" // Unix nanoseconds
	// HeaderDirect marks the checkpoint a direct start created with the
	// session that wrote it (docs/engine.md §4.1); later writes do not
	// carry it. The instance index keeps it, so that a node can find the
	// direct creates a stopped session may have left without their
	// effects.
	HeaderDirect = "Jetbpm-Direct"
)

// StatusIncident is the status shown for an active instance that needs an
// operator: it has open incidents, or a parallel join of it can never fire
// (instance.State.Stuck). It is alive, so listing "active" includes it.
const StatusIncident instance.Status = "incident"

// Status is the status an instance is shown with: StatusIncident for an
// active instance with open incidents or a stuck join, else its own.
func Status(s *instance.State) instance.Status {
	if s.Status == instance.Active && (len(s.OpenIncidents()) > 0 || len(s.Stuck) > 0) {
		return StatusIncident
	}
	return s.Status
}

// summarize sets the summary headers of s on its checkpoint message m.
func summarize(m *nats.Msg, s *instance.State) {
	m.Header.Set(HeaderProcess, s.ProcessID)
	m.Header.Set(HeaderStatus, string(Status(s)))
	m.Header.Set(HeaderStarted, strconv.FormatInt(s.StartedAt.UnixNano(), 10))
	if open := openValue(s); open != "" {
		m.Header.Set(HeaderOpen, open)
	}
}

// HeaderOpen counts what a checkpoint's instance waits on outside its
// checkpoint, "jobs=<n> timers=<m>": its jobs in the job queue and its
// timer schedules. The store check compares the counts with the queue and
// the schedules without reading a checkpoint's value
// (docs/reliability.md, "A damaged store"). Absent when both are zero.
const HeaderOpen = "Jetbpm-Open"

// openValue returns the value of HeaderOpen for s, "" for none.
func openValue(s *instance.State) string {
	var jobs, timers int
	for _, w := range s.Waits {
		switch {
		case w.Kind == instance.JobWait:
			jobs++
		case w.Kind.Timer():
			timers++
		}
	}
	if jobs == 0 && timers == 0 {
		return ""
	}
	return "jobs=" + strconv.Itoa(jobs) + " timers=" + strconv.Itoa(timers)
}

// OpenCounts returns the counts a checkpoint's headers h hold (HeaderOpen);
// ok is false when the header is there but malformed.
func OpenCounts(h nats.Header) (jobs, timers int, ok bool) {
	v := h.Get(HeaderOpen)
	if v == "" {
		return 0, 0, true
	}
	if _, err := fmt.Sscanf(v, "jobs=%d timers=%d", &jobs, &timers); err != nil || jobs < 0 || timers < 0 {
		return 0, 0, false
	}
	return jobs, timers, true
}
