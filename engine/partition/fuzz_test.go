package partition

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strconv"
	"testing"

	"github.com/jetbpm/jetbpm/jobs"
	"github.com/jetbpm/jetbpm/streams"
)

// FuzzDecodeReport: a worker's message body never panics the engine; it
// decodes to a report or to a refusal with a reason, the same report or
// refusal as when encoding/json's Decoder read reports.
func FuzzDecodeReport(f *testing.F) {
	for _, seed := range []string{
		`{"kind":"complete","jobId":"i/t/2","delivery":"$JS.ACK.JETBPM_JOBS.topic-a.1.7.7.1700000000000000000.0","output":{"n":1}}`,
		`{"kind":"fail","jobId":"j","delivery":"$JS.ACK.JETBPM_JOBS.topic-a.2.9.9.1.0","code":"503","body":{"a":[1,2,{"b":null}]},"retries":2}`,
		`{"kind":"bpmnError","jobId":"j","delivery":"x","errorCode":"E","vars":{"x":1e400}}`,
		`{"kind":"checkin","jobId":"j","delivery":"$JS.ACK.dom.acc.JETBPM_JOBS.topic-a.1.7.7.1.0.tok","replyTo":"_INBOX.w.1"}`,
		`{"kind":"extend","jobId":"j","delivery":"$JS.ACK.JETBPM_JOBS.c.18446744073709551615.1.1.1.0","extendMs":-5}`,
		`{"jobId":7}`, `[]`, `null`, ``, `{"kind":"status","status":""}`,
		`{"KIND":"complete","JobId":"j","delivery":"$JS.ACK.JETBPM_JOBS.c.1.2.3.4.0","output":{"n":12345678901234567890,"f":-0.0}} {"more"`,
		`{"kind":"fail","jobId":"j","replyTo":"_INBOX.x.1","delivery":"$JS.ACK.JETBPM_JOBS.c.1.2.3.4.0","attempts":1.5}`,
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
		wantRep, wantRefusal := decodeReportEncodingJSON(data)
		if !reflect.DeepEqual(rep, wantRep) || !reflect.DeepEqual(refusal, wantRefusal) {
			t.Fatalf("%q: decoded %+v %+v, with encoding/json %+v %+v", data, rep, refusal, wantRep, wantRefusal)
		}
	})
}

// decodeReportEncodingJSON is decodeReport as it was with encoding/json.
func decodeReportEncodingJSON(data []byte) (*report, *jobAction) {
	var r jobs.Report
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&r); err != nil {
		var loose struct {
			ReplyTo string `json:"replyTo"`
			JobID   string `json:"jobId"`
		}
		_ = json.Unmarshal(data, &loose)
		return nil, &jobAction{replyTo: loose.ReplyTo, verdict: jobs.Verdict{JobID: loose.JobID, Reason: "malformed report: " + err.Error()}}
	}
	if err := r.Validate(); err != nil {
		return nil, &jobAction{replyTo: r.ReplyTo, verdict: jobs.Verdict{JobID: r.JobID, Kind: r.Kind, Reason: err.Error()}}
	}
	if err := normalizeReport(&r); err != nil {
		return nil, &jobAction{replyTo: r.ReplyTo, verdict: jobs.Verdict{JobID: r.JobID, Kind: r.Kind, Reason: err.Error()}}
	}
	d, err := jobs.ParseDelivery(r.Delivery)
	if err != nil || d.Stream != streams.JobsStream {
		if err == nil {
			err = errors.New("delivery " + strconv.Quote(r.Delivery) + " is not from stream " + streams.JobsStream)
		}
		return nil, &jobAction{replyTo: r.ReplyTo, verdict: jobs.Verdict{JobID: r.JobID, Kind: r.Kind, Reason: err.Error()}}
	}
	return &report{r: r, delivery: d}, nil
}
