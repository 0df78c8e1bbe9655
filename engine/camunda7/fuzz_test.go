package camunda7

import (
	"encoding/json"
	"strings"
	"testing"
)

// FuzzDecodeVariables feeds typed-variable maps to the decoder: it must
// refuse or decode, never panic, and a decoded map must render back as
// typed values of the supported types.
func FuzzDecodeVariables(f *testing.F) {
	for _, s := range []string{
		`{"a":{"type":"integer","value":1,"valueInfo":{}}}`,
		`{"a":{"type":"Json","value":"{\"k\":[1,2]}"}}`,
		`{"a":{"type":"date","value":"1970-01-01T00:00:00.000+0000"}}`,
		`{"a":{"type":"Object","value":"{}","valueInfo":{"serializationDataFormat":"application/json"}}}`,
		`{"a":{"type":"object","value":"AAA","valueInfo":{"serializationDataFormat":"application/x-java-serialized-object"}}}`,
		`{"a":{"type":"Short","value":40000}}`, `{"a":{"type":"File","value":"aGk="}}`, `{"a":{"value":[1,{"b":null}]}}`,
		`{"a":{"type":"string","value":"x","valueInfo":{"transient":true}}}`, `{"a":{"type":"Null"}}`,
	} {
		f.Add(s)
	}
	supported := "String Boolean Integer Long Double Json Null"
	f.Fuzz(func(t *testing.T, s string) {
		var in map[string]Variable
		if json.Unmarshal([]byte(s), &in) != nil {
			return
		}
		vars, err := decodeVariables(in)
		if err != nil {
			return
		}
		for name, v := range encodeVariables(vars, nil) {
			if !strings.Contains(supported, v.Type) {
				t.Fatalf("variable %s rendered as %s", name, v.Type)
			}
			if _, err := json.Marshal(v); err != nil {
				t.Fatalf("variable %s does not encode: %v", name, err)
			}
		}
	})
}
