package camunda7_test

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/jetbpm/jetbpm/engine/camunda7"
)

// TestWireCaptureReplay replays the requests the real JS client sent to a
// mock server (testdata/capture), with the capture's task ids t1, t2, t3
// replaced by locked tasks, and checks jetbpm answers each as Camunda
// would for jetbpm's supported subset.
func TestWireCaptureReplay(t *testing.T) {
	raw, err := os.ReadFile("testdata/capture/camunda-external-task-client-js-3.1.0.wire-capture.json")
	if err != nil {
		t.Fatal(err)
	}
	var capture struct {
		Requests []struct {
			Method, URL, CT string
			Body            *string
		}
	}
	if err := json.Unmarshal(raw, &capture); err != nil {
		t.Fatal(err)
	}
	f := setup(t, camunda7.Options{})
	f.deploy(t, "order.bpmn", orderXML("PT30S"))
	// The captured fetch asks topic "probe" for worker w1.
	ids := map[string]string{}
	for _, name := range []string{"t1", "t2"} {
		f.start(t, nil)
		ids[name] = f.fetchOne(t, "w1").ID
	}
	want := map[string]struct {
		status int
		text   string
	}{
		"fetchAndLock": {200, "[]"},                    // no job on topic probe
		"data":         {404, "no Camunda 7 endpoint"}, // file variables are not supported
		"unlock":       {404, "not found"},             // t3 is unknown, as in the capture
		"extendLock":   {204, ""},
		"failure":      {204, ""},                              // t2 gets 2 more retries
		"lock":         {404, "no Camunda 7 endpoint"},         // not served
		"bpmnError":    {400, "already sent back for a retry"}, // t2 was sent back by the failure
		"complete":     {400, "x-java-serialized-object"},      // the Java-serialized Object is refused
	}
	for _, req := range capture.Requests {
		path := strings.TrimPrefix(req.URL, camunda7.Prefix)
		for name, id := range ids {
			path = strings.Replace(path, "/"+name+"/", "/"+id+"/", 1)
		}
		var body *strings.Reader
		if req.Body != nil {
			body = strings.NewReader(*req.Body)
		} else {
			body = strings.NewReader("")
		}
		r, err := http.NewRequest(req.Method, f.srv.URL+camunda7.Prefix+path, body)
		if err != nil {
			t.Fatal(err)
		}
		if req.CT != "" {
			r.Header.Set("Content-Type", req.CT)
		}
		resp, err := http.DefaultClient.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		b := string(data)
		last := path[strings.LastIndexByte(path, '/')+1:]
		w := want[last]
		if resp.StatusCode != w.status || !strings.Contains(b, w.text) {
			t.Errorf("%s %s: %d %s; want %d with %q", req.Method, path, resp.StatusCode, b, w.status, w.text)
		}
		if resp.StatusCode != 204 && resp.Header.Get("Content-Type") != "application/json" {
			t.Errorf("%s %s: content type %q", req.Method, path, resp.Header.Get("Content-Type"))
		}
	}
}
