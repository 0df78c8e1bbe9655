package lost_test

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/jetbpm/jetbpm/engine/lost"
)

func TestMarksCompare(t *testing.T) {
	marks := lost.Marks{Streams: map[string]uint64{"A": 10, "B": 20, "C": 5, "D": 0}}
	gaps := marks.Compare(map[string]uint64{"A": 12, "B": 17, "D": 0})
	if len(gaps) != 2 {
		t.Fatalf("gaps = %+v, want B went back and C gone", gaps)
	}
	if g := gaps[0]; g.Stream != "B" || g.Marked != 20 || g.Found != 17 || g.Gone {
		t.Errorf("gap 0 = %+v", g)
	}
	if g := gaps[1]; g.Stream != "C" || !g.Gone || !strings.Contains(g.String(), "gone") {
		t.Errorf("gap 1 = %+v (%s)", g, g)
	}
	if s := gaps[0].String(); !strings.Contains(s, "went back from sequence 20 to 17: up to 3") {
		t.Errorf("gap text %q", s)
	}
}

func TestMarksMergeAndCovers(t *testing.T) {
	t0 := time.Date(2026, 12, 6, 7, 0, 0, 0, time.UTC)
	a := lost.Marks{Streams: map[string]uint64{"A": 10, "B": 3}, At: t0}
	b := lost.Marks{Streams: map[string]uint64{"A": 8, "C": 4}, At: t0.Add(time.Second)}
	m := a.Merge(b)
	if m.Streams["A"] != 10 || m.Streams["B"] != 3 || m.Streams["C"] != 4 || !m.At.Equal(b.At) {
		t.Fatalf("merged = %+v", m)
	}
	if a.Streams["C"] != 0 {
		t.Error("Merge changed its receiver")
	}
	if !m.Covers(a) || !m.Covers(b) || a.Covers(b) {
		t.Error("Covers is wrong")
	}
	if !(lost.Marks{}).Merge(lost.Marks{}).Covers(lost.Marks{}) {
		t.Error("zero marks do not cover zero marks")
	}
}

func TestMarksFile(t *testing.T) {
	m := lost.Marks{Streams: map[string]uint64{"KV_jetbpm-instances": 1234, "JETBPM_JOBS": 99}, At: time.Date(2026, 12, 6, 7, 0, 0, 0, time.UTC)}
	data := m.EncodeFile()
	back, err := lost.DecodeFile(data)
	if err != nil {
		t.Fatal(err)
	}
	if back.Streams["KV_jetbpm-instances"] != 1234 || back.Streams["JETBPM_JOBS"] != 99 || !back.At.Equal(m.At) {
		t.Fatalf("decoded %+v", back)
	}
	// Every flipped bit and every cut is an error, never other marks.
	for bit := range len(data) * 8 {
		flipped := bytes.Clone(data)
		flipped[bit/8] ^= 1 << (bit % 8)
		if got, err := lost.DecodeFile(flipped); err == nil && !equalMarks(got, m) {
			t.Fatalf("bit %d flipped: decoded %+v", bit, got)
		}
	}
	for n := range len(data) - 1 {
		if got, err := lost.DecodeFile(data[:n]); err == nil {
			t.Fatalf("cut to %d bytes: decoded %+v", n, got)
		}
	}
}

func equalMarks(a, b lost.Marks) bool {
	if len(a.Streams) != len(b.Streams) || !a.At.Equal(b.At) {
		return false
	}
	for k, v := range a.Streams {
		if b.Streams[k] != v {
			return false
		}
	}
	return true
}

func FuzzDecodeFile(f *testing.F) {
	f.Add(lost.Marks{Streams: map[string]uint64{"A": 1}}.EncodeFile())
	f.Add([]byte("jetbpm-marks 1\n00000000\n{}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		_, _ = lost.DecodeFile(data)
	})
}

func TestOrphans(t *testing.T) {
	now := time.Date(2026, 12, 6, 7, 0, 0, 0, time.UTC)
	traces := []lost.Trace{
		{Instance: "a", Source: "job", ID: "j1", At: now},
		{Instance: "b", Source: "job", ID: "j2", At: now},
		{Instance: "b", Source: "timer", ID: "t1"},
		{Instance: "c", Source: "timer", ID: "t2", At: now.Add(-10 * 24 * time.Hour)}, // older than the retention
		{Instance: "d", Source: "task", ID: "d.t1", At: now},
	}
	asked := map[string]int{}
	exists := func(id string) bool { asked[id]++; return id == "a" }
	got := lost.Orphans(traces, exists, now.Add(-7*24*time.Hour))
	if len(got) != 2 || len(got["b"]) != 2 || len(got["d"]) != 1 {
		t.Fatalf("orphans = %+v, want b (2 traces) and d", got)
	}
	if asked["b"] != 1 || asked["c"] != 0 {
		t.Errorf("exists asked %v: once per instance, never for a trace too old to count", asked)
	}
}

func TestInstanceRecord(t *testing.T) {
	now := time.Date(2026, 12, 6, 7, 0, 0, 0, time.UTC)
	r := lost.InstanceRecord("i-1", []lost.Trace{
		{Instance: "i-1", Source: "timer", ID: "w2"},
		{Instance: "i-1", Source: "job", ID: "n1/1", At: now.Add(-time.Minute), Process: "order", Version: 2, Element: "charge", Vars: map[string]any{"amount": 5}},
		{Instance: "i-1", Source: "incident", ID: "inc-1", At: now, Element: "ship"},
	}, now)
	if r.Kind != lost.Instance || r.Status != lost.Open || r.Key() != "instance.i-1" {
		t.Fatalf("record %+v", r)
	}
	if r.Process != "order" || r.Version != 2 || r.Element != "ship" || r.Vars["amount"] != 5 {
		t.Errorf("known: process %q v%d element %q vars %v; want order v2 at ship (the latest trace) with the job's variables", r.Process, r.Version, r.Element, r.Vars)
	}
	if !strings.Contains(r.Detail, "incident inc-1, job n1/1, timer w2") {
		t.Errorf("detail %q", r.Detail)
	}
}

func TestSummary(t *testing.T) {
	now := time.Now()
	recs := []lost.Record{
		lost.InstanceRecord("i-3", nil, now), lost.InstanceRecord("i-1", nil, now), lost.InstanceRecord("i-2", nil, now),
		lost.InstanceRecord("i-4", nil, now),
		lost.GapRecord(lost.Gap{Stream: "KV_jetbpm-instances", Marked: 9, Found: 4}, now),
		{Kind: lost.Instance, Instance: "closed", Status: lost.Dismissed},
	}
	got := lost.Summary(recs)
	want := "store damaged: 4 lost instance(s) (i-1, i-2, i-3 and 1 more); 1 stream(s) went back (KV_jetbpm-instances); see jetbpm store check"
	if got != want {
		t.Errorf("summary\n got %q\nwant %q", got, want)
	}
	if s := lost.Summary(recs[5:]); s != "" {
		t.Errorf("only closed records: %q, want none", s)
	}
	if k := recs[4].Key(); k != "stream.KV_jetbpm-instances.4" {
		t.Errorf("gap key %q", k)
	}
}
