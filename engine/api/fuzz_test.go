package api

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jetbpm/jetbpm/engine"
	"github.com/jetbpm/jetbpm/engine/enginetest"
	"github.com/jetbpm/jetbpm/streams/streamstest"
)

var fuzzOps = []string{OpDeploy, OpStart, OpInstanceGet, OpInstanceList, OpInstanceCancel, OpInstanceCompensate,
	OpIncidentList, OpIncidentGet, OpIncidentRetry, OpIncidentResolve, OpIncidentAbandon, OpProcessList, OpProcessGet, OpInstanceSetVars, OpStoreCheck, OpStoreDismiss, OpStoreRecreate, "bogus"}

// FuzzDispatch: any body for any operation gets a result or an error the
// wire can name, against a real engine; nothing panics or hangs.
func FuzzDispatch(f *testing.F) {
	xml := `<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL"><bpmn:process id="p" isExecutable="true"><bpmn:startEvent id="s"/><bpmn:endEvent id="e"/><bpmn:sequenceFlow id="f" sourceRef="s" targetRef="e"/></bpmn:process></bpmn:definitions>`
	f.Add(uint8(0), `{"files":[{"name":"p.bpmn","xml":"`+strings.ReplaceAll(xml, `"`, `\"`)+`"}]}`)
	f.Add(uint8(1), `{"processId":"p","vars":{"a":[1,2,{"b":null}]}}`)
	f.Add(uint8(1), `{"processId":"p","id":"a.b","vars":[1]}`)
	f.Add(uint8(2), `{"id":"../../etc"}`)
	f.Add(uint8(3), `{"status":"incident","limit":-1}`)
	f.Add(uint8(4), `{"id":"x","reason":"`+strings.Repeat("r", 300)+`"}`)
	f.Add(uint8(5), `{"state":"closed","olderThan":"-5d"}`)
	f.Add(uint8(8), `{"id":"i/n/1","vars":"nope"}`)
	f.Add(uint8(10), `{}`)
	f.Add(uint8(13), `{"id":"x","vars":{"a":1},"requestId":"r 1"}`)
	f.Add(uint8(13), `{"id":"x","vars":[1]}`)
	f.Add(uint8(6), ``)
	env := streamstest.Start(f)
	eng := enginetest.Open(f, env.Conn, engine.Options{})
	h := NewHandler(eng)
	f.Fuzz(func(t *testing.T, op uint8, body string) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, err := h.Do(ctx, fuzzOps[int(op)%len(fuzzOps)], []byte(body))
		if errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("request hung: %v", err)
		}
		if err != nil && toError(err).Message == "" {
			t.Fatal("an error without a message")
		}
	})
}
