package messages

import (
	"errors"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/jetbpm/jetbpm/streams"
)

// FuzzDecodeMessage: a published message (body and headers, from any NATS
// client) never panics the engine; it decodes to a message with storable
// variables or to an error naming the problem.
func FuzzDecodeMessage(f *testing.F) {
	for _, seed := range []struct{ body, ttl, id, reply string }{
		{`{"amount": 20}`, "1h", "pay-991", ""},
		{`{"a":{"b":[1,2.5,null,true,"x"]},"n":18446744073709551616}`, "", "", "_INBOX.a.b"},
		{``, "0s", "", ""}, {`null`, "", "", ""}, {`[]`, "", "", ""}, {`"x"`, "1", "", ""},
		{`{"a":1} {"b":2}`, "-1s", "", "jetbpm.api.x"}, {"\xc1\x01\x81\xa1a\x01", "90s", "id", ""},
		{"\xc1\x01\xff", "", "", ""}, {`{"a":` + strings.Repeat("[", 100) + `1` + strings.Repeat("]", 100) + `}`, "", "", ""},
	} {
		f.Add([]byte(seed.body), seed.ttl, seed.id, seed.reply)
	}
	limit := func(name string, v any) error {
		data, err := streams.Marshal(v)
		if err == nil && len(data) > 1024 {
			return errors.New("too large")
		}
		return err
	}
	f.Fuzz(func(t *testing.T, body []byte, ttl, id, reply string) {
		h := nats.Header{}
		for k, v := range map[string]string{streams.MessageTTLHeader: ttl, "Nats-Msg-Id": id, streams.MessageReplyHeader: reply} {
			if v != "" {
				h.Set(k, v)
			}
		}
		m, err := decodeMessage(h, body, limit)
		if m == nil {
			t.Fatal("no message returned, not even to answer")
		}
		if err != nil {
			if err.Error() == "" {
				t.Fatal("an error without a reason")
			}
			return
		}
		if m.TTL < 0 || len(m.ID) > MaxString || m.ReplyTo != "" && !streams.ValidInbox(m.ReplyTo) {
			t.Fatalf("accepted %+v", m)
		}
		if _, err := streams.Marshal(m.Vars); err != nil {
			t.Fatalf("accepted variables that cannot be stored: %v", err)
		}
		for name, v := range m.Vars {
			if limit(name, v) != nil {
				t.Fatalf("accepted variable %q over the limit", name)
			}
		}
	})
}
