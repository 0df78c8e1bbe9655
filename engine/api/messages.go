package api

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/jetbpm/jetbpm/engine"
)

// MessageRequest publishes or correlates a message. Name is required; at
// most one of Key, BusinessKey and Instance says whom it is for (none: a
// message with an empty key, which only message start events take). Key
// is a JSON string or number. TTL, a Go duration ("90s", "1h") or whole
// days ("7d"), buffers a published message for subscriptions that open
// later; correlate never buffers. ID refuses a second publish of the same
// message id while the first is buffered.
type MessageRequest struct {
	Name        string          `json:"name"`
	Key         json.RawMessage `json:"key,omitempty"`
	BusinessKey string          `json:"businessKey,omitempty"`
	Instance    string          `json:"instance,omitempty"`
	Vars        json.RawMessage `json:"vars,omitempty"`
	TTL         string          `json:"ttl,omitempty"`
	ID          string          `json:"id,omitempty"`
}

// MessagePublishResponse names the message published.
type MessagePublishResponse struct {
	ID string `json:"id"`
}

// MessageCorrelateResponse names the instance the message reached.
type MessageCorrelateResponse struct {
	Instance string `json:"instanceId"`
}

// Message turns the request into the engine's message.
func (r MessageRequest) Message() (engine.Message, error) {
	m := engine.Message{Name: r.Name, BusinessKey: r.BusinessKey, Instance: r.Instance, ID: r.ID}
	key, err := correlationKey(r.Key)
	if err != nil {
		return m, err
	}
	m.Key = key
	if m.Vars, err = decodeVars(r.Vars); err != nil {
		return m, err
	}
	if r.TTL != "" {
		if m.TTL, err = ParseAge(r.TTL); err != nil {
			return m, fmt.Errorf("%w: ttl %q: want a duration such as 90s, 1h or 7d", engine.ErrInvalid, r.TTL)
		}
	}
	return m, nil
}

// correlationKey reads a key written as a JSON string or number; a number
// becomes its decimal text, as it would when a catch evaluates it.
func correlationKey(raw json.RawMessage) (string, error) {
	text := strings.TrimSpace(string(raw))
	if text == "" || text == "null" {
		return "", nil
	}
	if text[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", fmt.Errorf("%w: key: %v", engine.ErrInvalid, err)
		}
		return s, nil
	}
	f, err := strconv.ParseFloat(text, 64)
	if err != nil || !json.Valid(raw) {
		return "", fmt.Errorf("%w: key %s: want a string or a number", engine.ErrInvalid, text)
	}
	return strconv.FormatFloat(f, 'f', -1, 64), nil
}
