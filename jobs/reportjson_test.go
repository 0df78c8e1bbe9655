package jobs

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"
)

// decodeReportJSON is the engine's decoding before the hand-written codec.
func decodeReportJSON(data []byte, r *Report) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	return dec.Decode(r)
}

func sampleReports() []Report {
	zero, three := 0, 3
	return []Report{
		{},
		{Kind: Complete, JobID: "order-1/charge/2", Delivery: "$JS.ACK.JETBPM_JOBS.topic-payments.1.7.7.1795984111041446501.0",
			Worker: "w1", ReplyTo: "_INBOX.worker.abc.1", Output: map[string]any{"ok": true, "n": 7, "list": []any{json.Number("1.50")}}},
		{Kind: BpmnError, JobID: "j", Delivery: "d", ErrorCode: "E<1>", Message: "line\nbreak", Vars: map[string]any{"x": nil}},
		{Kind: Fail, JobID: "j", Delivery: "d", Code: "503", Body: "", Retries: &zero, RetryBackoffMs: -1, Attempts: 2, CannotRunPolicy: true},
		{Kind: Fail, JobID: "j", Delivery: "d", Body: map[string]any{"a": []any{1, 2, map[string]any{"b": nil}}}, Retries: &three},
		{Kind: Status, Status: "NF", Output: map[string]any{}, Vars: map[string]any{}},
		{Kind: Extend, JobID: "j", Delivery: "d", ExtendMs: 30000},
	}
}

func TestReportJSONMatchesEncodingJSON(t *testing.T) {
	for _, r := range sampleReports() {
		b, err := AppendReport(nil, &r)
		marshalsAlike(t, r, b, err)
		back, ok := decodesAlike(t, b, decodeReport, DecodeReport, decodeReportJSON)
		if !ok || back.JobID != r.JobID || back.Kind != r.Kind || (back.Retries == nil) != (r.Retries == nil) {
			t.Fatalf("round trip of %s: %+v", b, back)
		}
	}
}

// TestReportJSONAsTheDecoderReads: the first value counts, numbers are
// json.Number, a body "" is kept, malformed gets encoding/json's error.
func TestReportJSONAsTheDecoderReads(t *testing.T) {
	var r Report
	if err := DecodeReport([]byte(` {"kind":"fail","jobId":"j","body":"","output":{"n":12345678901234567890}} trailing {`), &r); err != nil {
		t.Fatal(err)
	}
	if r.Body != "" || r.Output["n"] != json.Number("12345678901234567890") {
		t.Fatalf("decoded %+v", r)
	}
	for _, bad := range []string{``, `   `, `{"kind":"x"`, `{"retries":1.5}`, `{"attempts":"1"}`, `[]`} {
		err := DecodeReport([]byte(bad), &r)
		want := decodeReportJSON([]byte(bad), new(Report))
		if err == nil || want == nil || err.Error() != want.Error() {
			t.Errorf("%q: error %v, want encoding/json's %v", bad, err, want)
		}
	}
	r = Report{Kind: Complete, Output: map[string]any{"c": make(chan int)}}
	b, err := AppendReport(nil, &r)
	marshalsAlike(t, r, b, err)
	if err == nil || !strings.Contains(err.Error(), "unsupported type") {
		t.Fatalf("a channel in the output: %v", err)
	}
}

// FuzzReportJSON: the hand-written report codec and the engine's
// json.Decoder agree on any message, and json.Marshal on any report's
// bytes.
func FuzzReportJSON(f *testing.F) {
	for _, r := range sampleReports() {
		b, _ := json.Marshal(r)
		f.Add(b, r.JobID, 2.5, int64(0))
	}
	f.Add([]byte(`{"KIND":"complete","jobid":"j","retries":null,"retries":2,"body":{"x":1e999},"output":null}`), "\u2028", math.Inf(1), int64(math.MaxInt64))
	f.Fuzz(func(t *testing.T, data []byte, s string, fl float64, n int64) {
		r, ok := decodesAlike(t, data, decodeReport, DecodeReport, decodeReportJSON)
		if ok {
			b, err := AppendReport(nil, &r)
			marshalsAlike(t, r, b, err)
		}
		i := int(n)
		r = Report{Kind: ReportKind(s), JobID: s, Delivery: s, Worker: s, Output: map[string]any{s: fl}, Message: s, Body: fl,
			Retries: &i, RetryBackoffMs: n, Attempts: i, CannotRunPolicy: n%2 == 0, ExtendMs: -n}
		b, err := AppendReport(nil, &r)
		marshalsAlike(t, r, b, err)
	})
}

// BenchmarkReportJSON is a worker's encoding and the engine's decoding of
// a complete report, by the hand-written codec and by encoding/json.
func BenchmarkReportJSON(b *testing.B) {
	r := sampleReports()[1]
	r.Output = map[string]any{"ok": true}
	data, err := json.Marshal(r)
	if err != nil {
		b.Fatal(err)
	}
	benchCodec(b, data, func() error { _, err := AppendReport(make([]byte, 0, 256), &r); return err },
		func() error { var x Report; return DecodeReport(data, &x) },
		func() error { _, err := json.Marshal(r); return err },
		func() error { var x Report; return decodeReportJSON(data, &x) })
}

// benchCodec runs encode and decode by hand and by encoding/json.
func benchCodec(b *testing.B, data []byte, enc, dec, encJSON, decJSON func() error) {
	for _, bc := range []struct {
		name string
		fn   func() error
	}{{"encode", enc}, {"decode", dec}, {"encode-encoding-json", encJSON}, {"decode-encoding-json", decJSON}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				if err := bc.fn(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// A task listener's result is written as encoding/json writes it, and
// read by encoding/json (the fast decoder hands it over).
func TestReportJSONWithTaskResult(t *testing.T) {
	prio, who, groups := 80, "ann", []string{}
	due := time.Date(2026, 12, 24, 17, 0, 0, 0, time.UTC)
	for _, res := range []*TaskResult{
		{Denied: true, DeniedReason: "not now"},
		{Corrections: &TaskCorrections{Assignee: &who, Priority: &prio, CandidateGroups: &groups, DueDate: &due}},
	} {
		r := Report{Kind: Complete, JobID: "j", Delivery: "d", Output: map[string]any{"a": 1}, Result: res}
		b, err := AppendReport(nil, &r)
		marshalsAlike(t, r, b, err)
		var back, want Report
		if err := DecodeReport(b, &back); err != nil {
			t.Fatal(err)
		}
		if err := decodeReportJSON(b, &want); err != nil {
			t.Fatal(err)
		}
		got, _ := json.Marshal(back)
		exp, _ := json.Marshal(want)
		if !bytes.Equal(got, exp) || back.Result == nil || back.Result.Denied != res.Denied {
			t.Errorf("decoded %s, want %s", got, exp)
		}
		if err := back.Validate(); err != nil {
			t.Errorf("validate: %v", err)
		}
	}
	bad := []Report{
		{Kind: Fail, JobID: "j", Delivery: "d", Result: &TaskResult{}},
		{Kind: Complete, JobID: "j", Delivery: "d", Result: &TaskResult{Denied: true, Corrections: &TaskCorrections{}}},
		{Kind: Complete, JobID: "j", Delivery: "d", Result: &TaskResult{Corrections: &TaskCorrections{Priority: new(int(101))}}},
		{Kind: Complete, JobID: "j", Delivery: "d", Result: &TaskResult{Corrections: &TaskCorrections{CandidateUsers: &[]string{""}}}},
	}
	for _, r := range bad {
		if err := r.Validate(); err == nil {
			t.Errorf("%+v validates", r.Result)
		}
	}
}
