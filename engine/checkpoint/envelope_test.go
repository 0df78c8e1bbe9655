package checkpoint_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/jetbpm/jetbpm/engine/checkpoint"
	"github.com/jetbpm/jetbpm/engine/instance"
	"github.com/jetbpm/jetbpm/streams"
)

func encode(t testing.TB, env checkpoint.Envelope) []byte {
	t.Helper()
	b, err := streams.Marshal(env)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestDecodeStart(t *testing.T) {
	good := checkpoint.Envelope{Instance: "i-1", Start: &checkpoint.StartRequest{ProcessID: "p", Version: 2, Vars: map[string]any{"n": int64(1)}, BusinessKey: "bk"}}
	got, err := checkpoint.DecodeStart(encode(t, good))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, good) {
		t.Fatalf("decoded %+v, want %+v", got, good)
	}
	for name, tc := range map[string]struct {
		data []byte
		want string
	}{
		"empty":        {nil, "start envelope"},
		"garbage":      {[]byte("{not msgpack"), "start envelope"},
		"no start":     {encode(t, checkpoint.Envelope{Instance: "i-1"}), "no start request"},
		"an event too": {encode(t, checkpoint.Envelope{Instance: "i-1", Start: good.Start, Event: &instance.Event{ID: "e"}}), "an event as well"},
		"bad id":       {encode(t, checkpoint.Envelope{Instance: "a.b", Start: good.Start}), `instance id "a.b"`},
		"no id":        {encode(t, checkpoint.Envelope{Start: good.Start}), `instance id ""`},
		"no process":   {encode(t, checkpoint.Envelope{Instance: "i-1", Start: &checkpoint.StartRequest{Version: 1}}), "want a process id"},
		"version 0":    {encode(t, checkpoint.Envelope{Instance: "i-1", Start: &checkpoint.StartRequest{ProcessID: "p"}}), "version 0"},
	} {
		if _, err := checkpoint.DecodeStart(tc.data); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one naming %q", name, err, tc.want)
		}
	}
}

// FuzzDecodeStart: no input panics, and what decodes is a start for a
// valid id that encodes and decodes to itself.
func FuzzDecodeStart(f *testing.F) {
	f.Add(encode(f, checkpoint.Envelope{Instance: "i-1", Start: &checkpoint.StartRequest{ProcessID: "p", Version: 1}}))
	f.Add(encode(f, checkpoint.Envelope{Instance: "i-1"}))
	f.Add([]byte{0x80})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		env, err := checkpoint.DecodeStart(data)
		if err != nil {
			return
		}
		if env.Start == nil || env.Event != nil || !checkpoint.ValidID(env.Instance) {
			t.Fatalf("accepted %+v", env)
		}
		again, err := checkpoint.DecodeStart(encode(t, env))
		if err != nil {
			t.Fatalf("%+v encoded does not decode: %v", env, err)
		}
		if again.Instance != env.Instance || again.Start.ProcessID != env.Start.ProcessID || again.Start.Version != env.Start.Version {
			t.Fatalf("round trip changed %+v into %+v", env, again)
		}
	})
}
