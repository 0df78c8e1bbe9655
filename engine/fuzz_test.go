package engine

import (
	"testing"
)

// FuzzDecodeReport: a worker's message body never panics the engine; it
// decodes to a report or to a refusal with a reason.
func FuzzDecodeReport(f *testing.F) {
	for _, seed := range []string{
		`{"kind":"complete","jobId":"i/t/2","delivery":"$JS.ACK.JETBPM_JOBS.topic-a.1.7.7.1700000000000000000.0","output":{"n":1}}`,
		`{"kind":"fail","jobId":"j","delivery":"$JS.ACK.JETBPM_JOBS.topic-a.2.9.9.1.0","code":"503","body":{"a":[1,2,{"b":null}]},"retries":2}`,
		`{"kind":"bpmnError","jobId":"j","delivery":"x","errorCode":"E","vars":{"x":1e400}}`,
		`{"kind":"checkin","jobId":"j","delivery":"$JS.ACK.dom.acc.JETBPM_JOBS.topic-a.1.7.7.1.0.tok","replyTo":"_INBOX.w.1"}`,
		`{"kind":"extend","jobId":"j","delivery":"$JS.ACK.JETBPM_JOBS.c.18446744073709551615.1.1.1.0","extendMs":-5}`,
		`{"jobId":7}`, `[]`, `null`, ``, `{"kind":"status","status":""}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		rep, refusal := decodeReport(data)
		if (rep == nil) == (refusal == nil) {
			t.Fatalf("want exactly one of a report or a refusal: %v %v", rep, refusal)
		}
		if refusal != nil && refusal.verdict.Reason == "" {
			t.Fatal("a refusal without a reason")
		}
		if rep != nil && (rep.r.JobID == "" || rep.delivery.Count == 0 || rep.delivery.Seq == 0) {
			t.Fatalf("accepted an incomplete report: %+v", rep)
		}
	})
}
