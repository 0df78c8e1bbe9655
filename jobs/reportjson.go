package jobs

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"

	"github.com/jetbpm/jetbpm/internal/wirejson"
)

// A worker writes a report per job (two with a check-in, more with lock
// extensions) and the engine reads each, so the report's JSON is written
// and read by hand (package wirejson) with encoding/json's bytes and
// semantics.

// AppendReport appends r's JSON, the bytes json.Marshal(r) makes, or
// returns its error (an output, vars or body value that is not JSON).
func AppendReport(b []byte, r *Report) ([]byte, error) {
	b = append(b, `{"kind":`...)
	b = wirejson.AppendString(b, string(r.Kind))
	b = append(b, `,"jobId":`...)
	b = wirejson.AppendString(b, r.JobID)
	b = append(b, `,"delivery":`...)
	b = wirejson.AppendString(b, r.Delivery)
	b = appendOptString(b, `,"worker":`, r.Worker)
	b = appendOptString(b, `,"replyTo":`, r.ReplyTo)
	var err error
	if len(r.Output) > 0 {
		b = append(b, `,"output":`...)
		if b, err = wirejson.AppendMap(b, r.Output); err != nil {
			return nil, err
		}
	}
	if r.Result != nil { // a task listener's, rare: encoding/json writes it
		data, err := json.Marshal(r.Result)
		if err != nil {
			return nil, err
		}
		b = append(append(b, `,"result":`...), data...)
	}
	b = appendOptString(b, `,"errorCode":`, r.ErrorCode)
	b = appendOptString(b, `,"message":`, r.Message)
	if len(r.Vars) > 0 {
		b = append(b, `,"vars":`...)
		if b, err = wirejson.AppendMap(b, r.Vars); err != nil {
			return nil, err
		}
	}
	b = appendOptString(b, `,"status":`, r.Status)
	b = appendOptString(b, `,"code":`, r.Code)
	if r.Body != nil {
		b = append(b, `,"body":`...)
		if b, err = wirejson.AppendValue(b, r.Body); err != nil {
			return nil, err
		}
	}
	if r.Retries != nil {
		b = append(b, `,"retries":`...)
		b = strconv.AppendInt(b, int64(*r.Retries), 10)
	}
	b = appendOptInt(b, `,"retryBackoffMs":`, r.RetryBackoffMs)
	b = appendOptInt(b, `,"attempts":`, int64(r.Attempts))
	if r.CannotRunPolicy {
		b = append(b, `,"cannotRunPolicy":true`...)
	}
	b = appendOptInt(b, `,"extendMs":`, r.ExtendMs)
	return append(b, '}'), nil
}

// appendOptString appends an omitempty string field.
func appendOptString(b []byte, name, v string) []byte {
	if v == "" {
		return b
	}
	return wirejson.AppendString(append(b, name...), v)
}

// appendOptInt appends an omitempty integer field.
func appendOptInt(b []byte, name string, v int64) []byte {
	if v == 0 {
		return b
	}
	return strconv.AppendInt(append(b, name...), v, 10)
}

// DecodeReport replaces *r with the report data holds, as the engine's
// json.Decoder with UseNumber decodes it into a zero Report: the first
// JSON value counts (what follows it is not read), unknown fields are
// ignored, names match regardless of case, and numbers in output, vars
// and body are json.Number. Malformed data gets encoding/json's error.
func DecodeReport(data []byte, r *Report) error {
	var fast Report
	if decodeReport(data, &fast) == nil {
		*r = fast
		return nil
	}
	var slow Report
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	err := dec.Decode(&slow)
	*r = slow
	return err
}

var reportFields = wirejson.NewFields("kind", "jobId", "delivery", "worker", "replyTo", "output", "errorCode",
	"message", "vars", "status", "code", "body", "retries", "retryBackoffMs", "attempts", "cannotRunPolicy", "extendMs", "result")

// errSlowPath sends a report the fast decoder does not read (a task
// listener's result) to encoding/json.
var errSlowPath = errors.New("jobs: report needs encoding/json")

// decodeReport is DecodeReport without the fallback.
func decodeReport(data []byte, r *Report) error {
	s := wirejson.NewScanner(data)
	s.UseNumber = true
	if !s.Null() && s.Object() {
		for s.More() {
			switch s.Field(reportFields) {
			case "kind":
				s.String((*string)(&r.Kind))
			case "jobId":
				s.String(&r.JobID)
			case "delivery":
				s.String(&r.Delivery)
			case "worker":
				s.String(&r.Worker)
			case "replyTo":
				s.String(&r.ReplyTo)
			case "output":
				s.Map(&r.Output)
			case "errorCode":
				s.String(&r.ErrorCode)
			case "message":
				s.String(&r.Message)
			case "vars":
				s.Map(&r.Vars)
			case "status":
				s.String(&r.Status)
			case "code":
				s.String(&r.Code)
			case "body":
				s.Any(&r.Body)
			case "retries":
				s.IntPtr(&r.Retries)
			case "retryBackoffMs":
				s.Int64(&r.RetryBackoffMs)
			case "attempts":
				s.Int(&r.Attempts)
			case "cannotRunPolicy":
				s.Bool(&r.CannotRunPolicy)
			case "extendMs":
				s.Int64(&r.ExtendMs)
			case "result":
				return errSlowPath
			default:
				s.Skip()
			}
		}
	}
	return s.Err() // a Decoder reads the first value only
}
