package instance

import (
	"encoding/json"
	"strconv"

	"github.com/jetbpm/jetbpm/internal/wirejson"
)

// Every instance publishes facts as it starts and ends, and subscribers
// (the bench among them) read them, so a fact's JSON is written and read
// by hand (package wirejson) with encoding/json's bytes and semantics.

// AppendFact appends f's JSON, the bytes json.Marshal(f) makes, or returns
// its error (a time outside years 0–9999).
func AppendFact(b []byte, f *Fact) ([]byte, error) {
	b = append(b, `{"id":`...)
	b = wirejson.AppendString(b, f.ID)
	b = append(b, `,"kind":`...)
	b = wirejson.AppendString(b, string(f.Kind))
	b = append(b, `,"instanceId":`...)
	b = wirejson.AppendString(b, f.Instance)
	b = append(b, `,"processId":`...)
	b = wirejson.AppendString(b, f.ProcessID)
	b = append(b, `,"version":`...)
	b = strconv.AppendInt(b, int64(f.Version), 10)
	b = append(b, `,"time":`...)
	b, err := wirejson.AppendTime(b, f.Time)
	if err != nil {
		return nil, err
	}
	for _, o := range [...]struct{ name, v string }{{`,"error":`, f.Error}, {`,"node":`, f.Node}, {`,"activity":`, f.Activity}} {
		if o.v != "" {
			b = wirejson.AppendString(append(b, o.name...), o.v)
		}
	}
	return append(b, '}'), nil
}

// UnmarshalFact replaces *f with the fact data holds, as json.Unmarshal
// into a zero Fact decodes it. Malformed data gets encoding/json's error.
func UnmarshalFact(data []byte, f *Fact) error {
	var fast Fact
	if decodeFact(data, &fast) == nil {
		*f = fast
		return nil
	}
	var slow Fact
	err := json.Unmarshal(data, &slow)
	*f = slow
	return err
}

var factFields = wirejson.NewFields("id", "kind", "instanceId", "processId", "version", "time", "error", "node", "activity")

// decodeFact is UnmarshalFact without the fallback.
func decodeFact(data []byte, f *Fact) error {
	s := wirejson.NewScanner(data)
	if !s.Null() && s.Object() {
		for s.More() {
			switch s.Field(factFields) {
			case "id":
				s.String(&f.ID)
			case "kind":
				s.String((*string)(&f.Kind))
			case "instanceId":
				s.String(&f.Instance)
			case "processId":
				s.String(&f.ProcessID)
			case "version":
				s.Int(&f.Version)
			case "time":
				s.Time(&f.Time)
			case "error":
				s.String(&f.Error)
			case "node":
				s.String(&f.Node)
			case "activity":
				s.String(&f.Activity)
			default:
				s.Skip()
			}
		}
	}
	return s.End()
}
