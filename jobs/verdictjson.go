package jobs

import (
	"encoding/json"

	"github.com/jetbpm/jetbpm/internal/wirejson"
)

// The engine answers every report with a verdict, so the verdict's JSON is
// written and read by hand (package wirejson) with encoding/json's bytes
// and semantics.

// AppendVerdict appends v's JSON, the bytes json.Marshal(v) makes, or
// returns its error (a lock expiry outside years 0–9999).
func AppendVerdict(b []byte, v *Verdict) ([]byte, error) {
	b = append(b, `{"jobId":`...)
	b = wirejson.AppendString(b, v.JobID)
	b = append(b, `,"kind":`...)
	b = wirejson.AppendString(b, string(v.Kind))
	if v.Accepted {
		b = append(b, `,"accepted":true`...)
	} else {
		b = append(b, `,"accepted":false`...)
	}
	b = appendOptString(b, `,"reason":`, v.Reason)
	if v.LockExpiresAt != nil {
		var err error
		if b, err = wirejson.AppendTime(append(b, `,"lockExpiresAt":`...), *v.LockExpiresAt); err != nil {
			_, err = json.Marshal(v.LockExpiresAt) // the error as encoding/json words it for a *time.Time
			return nil, err
		}
	}
	return append(b, '}'), nil
}

// UnmarshalVerdict replaces *v with the verdict data holds, as
// json.Unmarshal into a zero Verdict decodes it. Malformed data gets
// encoding/json's error.
func UnmarshalVerdict(data []byte, v *Verdict) error {
	var fast Verdict
	if decodeVerdict(data, &fast) == nil {
		*v = fast
		return nil
	}
	var slow Verdict
	err := json.Unmarshal(data, &slow)
	*v = slow
	return err
}

var verdictFields = wirejson.NewFields("jobId", "kind", "accepted", "reason", "lockExpiresAt")

// decodeVerdict is UnmarshalVerdict without the fallback.
func decodeVerdict(data []byte, v *Verdict) error {
	s := wirejson.NewScanner(data)
	if !s.Null() && s.Object() {
		for s.More() {
			switch s.Field(verdictFields) {
			case "jobId":
				s.String(&v.JobID)
			case "kind":
				s.String((*string)(&v.Kind))
			case "accepted":
				s.Bool(&v.Accepted)
			case "reason":
				s.String(&v.Reason)
			case "lockExpiresAt":
				s.TimePtr(&v.LockExpiresAt)
			default:
				s.Skip()
			}
		}
	}
	return s.End()
}
