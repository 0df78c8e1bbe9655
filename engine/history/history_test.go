package history_test

import (
	"slices"
	"testing"

	"github.com/jetbpm/jetbpm/engine/history"
	"github.com/jetbpm/jetbpm/streams"
)

func TestLevels(t *testing.T) {
	all := []string{history.Instance, history.Incident, history.Task, history.Message}
	want := map[history.Level][]string{
		"":                all,
		history.Full:      all,
		history.Instances: {history.Instance, history.Incident},
		history.Incidents: {history.Incident},
	}
	for lvl, kept := range want {
		for _, f := range all {
			if got := lvl.Keeps(f); got != slices.Contains(kept, f) {
				t.Errorf("level %q keeps %s: %v, want %v", lvl, f, got, !got)
			}
		}
	}
	if got := history.Incidents.Leaves(); !slices.Equal(got, []string{history.Instance, history.Task, history.Message}) {
		t.Errorf("incidents leaves %v", got)
	}
	if got := history.Full.Leaves(); got != nil {
		t.Errorf("full leaves %v", got)
	}
}

func TestParse(t *testing.T) {
	for s, want := range map[string]history.Level{"": history.Full, "full": history.Full,
		"instances": history.Instances, "incidents": history.Incidents} {
		if l, err := history.Parse(s); err != nil || l != want {
			t.Errorf("Parse(%q) = %q, %v; want %q", s, l, err, want)
		}
	}
	for _, s := range []string{"none", "Full", "audit", " full"} {
		if _, err := history.Parse(s); err == nil {
			t.Errorf("Parse(%q) accepted", s)
		}
	}
}

// The families are the fact subjects' own words.
func TestFamiliesAreFactSubjects(t *testing.T) {
	for f, s := range map[string]string{history.Instance: streams.FactInstance, history.Incident: streams.FactIncident,
		history.Task: streams.FactTask, history.Message: streams.FactMessage} {
		if f != s {
			t.Errorf("family %q, fact subject word %q", f, s)
		}
	}
}
