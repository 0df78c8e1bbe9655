package jobs

import (
	"encoding/json"
	"strconv"

	"github.com/jetbpm/jetbpm/internal/wirejson"
)

// The job message is written once per job by the engine and read once per
// delivery by a worker, so its JSON is written and read by hand (package
// wirejson) rather than by encoding/json's reflection. The bytes are
// json.Marshal's and the decoding json.Unmarshal's: a polyglot worker sees
// no difference. A policy, shipped only when a WorkerTrusted task's
// differs from its topic's default, goes through its own JSON methods.

// AppendJob appends j's JSON, the bytes json.Marshal(j) makes, or returns
// its error (an input value that is not JSON).
func AppendJob(b []byte, j *Job) ([]byte, error) {
	b = append(b, `{"id":`...)
	b = wirejson.AppendString(b, j.ID)
	b = append(b, `,"topic":`...)
	b = wirejson.AppendString(b, j.Topic)
	b = append(b, `,"instanceId":`...)
	b = wirejson.AppendString(b, j.Instance)
	b = append(b, `,"processId":`...)
	b = wirejson.AppendString(b, j.ProcessID)
	b = append(b, `,"nodeId":`...)
	b = wirejson.AppendString(b, j.Node)
	b = append(b, `,"input":`...)
	b, err := wirejson.AppendMap(b, j.Input)
	if err != nil {
		return nil, err
	}
	if len(j.Headers) > 0 {
		b = append(b, `,"headers":`...)
		b = wirejson.AppendStringMap(b, j.Headers)
	}
	b = append(b, `,"reportTo":`...)
	b = wirejson.AppendString(b, j.ReportTo)
	b = append(b, `,"lockDurationMs":`...)
	b = strconv.AppendInt(b, j.LockDurationMs, 10)
	b = append(b, `,"enqueuedAt":`...)
	if b, err = wirejson.AppendTime(b, j.EnqueuedAt); err != nil {
		return nil, err
	}
	if j.Policy != nil {
		p, err := json.Marshal(j.Policy)
		if err != nil {
			return nil, err
		}
		b = append(b, `,"policy":`...)
		b = append(b, p...)
	}
	if j.Listener != "" {
		b = append(b, `,"listener":`...)
		b = wirejson.AppendString(b, j.Listener)
	}
	return append(b, '}'), nil
}

// UnmarshalJob replaces *j with the job data holds, as json.Unmarshal
// into a zero Job decodes it: unknown fields ignored, names matched
// regardless of case, numbers in the input as float64. Malformed data gets
// encoding/json's error.
func UnmarshalJob(data []byte, j *Job) error {
	var fast Job
	if decodeJob(data, &fast) == nil {
		*j = fast
		return nil
	}
	var slow Job
	err := json.Unmarshal(data, &slow)
	*j = slow
	return err
}

var jobFields = wirejson.NewFields("id", "topic", "instanceId", "processId", "nodeId", "input", "headers",
	"reportTo", "lockDurationMs", "enqueuedAt", "policy", "listener")

// decodeJob is UnmarshalJob without the fallback: an error means
// malformed or left to encoding/json (wirejson.ErrUnsupported).
func decodeJob(data []byte, j *Job) error {
	s := wirejson.NewScanner(data)
	if !s.Null() && s.Object() {
		for s.More() {
			switch s.Field(jobFields) {
			case "id":
				s.String(&j.ID)
			case "topic":
				s.String(&j.Topic)
			case "instanceId":
				s.String(&j.Instance)
			case "processId":
				s.String(&j.ProcessID)
			case "nodeId":
				s.String(&j.Node)
			case "input":
				s.Map(&j.Input)
			case "headers":
				s.StringMap(&j.Headers)
			case "reportTo":
				s.String(&j.ReportTo)
			case "lockDurationMs":
				s.Int64(&j.LockDurationMs)
			case "enqueuedAt":
				s.Time(&j.EnqueuedAt)
			case "policy":
				decodePolicy(&s, &j.Policy)
			case "listener":
				s.String(&j.Listener)
			default:
				s.Skip()
			}
		}
	}
	return s.End()
}

// decodePolicy reads a shipped policy with its own UnmarshalJSON, as
// encoding/json would; null drops it.
func decodePolicy(s *wirejson.Scanner, p **Policy) {
	if s.Null() {
		*p = nil
		return
	}
	raw := s.Raw()
	if s.Err() != nil {
		return
	}
	if *p == nil {
		*p = new(Policy)
	}
	if err := (*p).UnmarshalJSON(raw); err != nil {
		*p = nil
		s.Fail(err)
	}
}
