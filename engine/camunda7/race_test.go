package camunda7_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jetbpm/jetbpm/engine/camunda7"
	"github.com/jetbpm/jetbpm/engine/instance"
)

// A worker whose lock expired and moved to another worker is stale: its
// complete is refused with 400 and changes nothing; the new holder's
// stands.
func TestStaleCompleteAfterTheLockMovedIsRefused(t *testing.T) {
	f := setup(t, camunda7.Options{})
	f.deploy(t, "order.bpmn", orderXML("PT1S"))
	id := f.start(t, nil)
	a := f.fetchOne(t, "a")
	b := f.fetchOne(t, "b") // the redelivery, after a's 1 s lock
	if b.ProcessInstanceID != id || b.ID == a.ID {
		t.Fatalf("b got %+v, a had %+v", b, a)
	}
	if b.Retries == nil || b.ErrorMessage == nil || !strings.Contains(*b.ErrorMessage, "lock expired") {
		t.Errorf("the expiry counts as a failed attempt: retries %v, errorMessage %v", b.Retries, b.ErrorMessage)
	}
	e := f.call(t, "POST", "/external-task/"+a.ID+"/complete", map[string]any{"workerId": "a",
		"variables": map[string]any{"by": map[string]any{"value": "a", "type": "String"}}}).restErr(t, 400)
	if !strings.Contains(e["message"].(string), "stale") {
		t.Errorf("stale complete: %v", e)
	}
	v, err := f.eng.Instance(ctxT(t), id)
	if err != nil {
		t.Fatal(err)
	}
	if v.Status != instance.Active || v.Variables["by"] != nil {
		t.Fatalf("the stale complete changed the instance: %s %v", v.Status, v.Variables)
	}
	if r := f.call(t, "POST", "/external-task/"+b.ID+"/complete", map[string]any{"workerId": "b",
		"variables": map[string]any{"by": map[string]any{"value": "b", "type": "String"}}}); r.status != 204 {
		t.Fatalf("the holder's complete: %d %s", r.status, r.body)
	}
	if v := f.waitEnded(t, id); v.Variables["by"] != "b" {
		t.Fatalf("by = %v", v.Variables["by"])
	}
}

// Two REST workers race for the same tasks: every job completes once.
func TestTwoRESTWorkersRaceAndEachJobCompletesOnce(t *testing.T) {
	f := setup(t, camunda7.Options{})
	f.deploy(t, "order.bpmn", orderXML("PT30S"))
	const n = 30
	ids := map[string]bool{}
	for range n {
		ids[f.start(t, nil)] = true
	}
	var mu sync.Mutex
	completed := map[string][]string{} // instance → workers whose complete was accepted
	total := 0
	errs := make(chan error, 2)
	var wg sync.WaitGroup
	deadline := time.Now().Add(60 * time.Second)
	for _, worker := range []string{"w1", "w2"} {
		wg.Go(func() {
			for time.Now().Before(deadline) {
				mu.Lock()
				done := total == n
				mu.Unlock()
				if done {
					return
				}
				tasks, err := post[[]lockedTask](f, "/external-task/fetchAndLock", map[string]any{"workerId": worker, "maxTasks": 4,
					"asyncResponseTimeout": 500, "topics": []any{map[string]any{"topicName": "charge", "lockDuration": 30000}}}, 200)
				if err != nil {
					errs <- err
					return
				}
				for _, task := range tasks {
					_, err := post[any](f, "/external-task/"+task.ID+"/complete", map[string]any{"workerId": worker,
						"variables": map[string]any{"by": map[string]any{"value": worker, "type": "String"}}}, 204)
					if err != nil {
						errs <- err
						return
					}
					mu.Lock()
					completed[task.ProcessInstanceID] = append(completed[task.ProcessInstanceID], worker)
					total++
					mu.Unlock()
				}
			}
			errs <- fmt.Errorf("%s: deadline", worker)
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if len(completed) != n || total != n {
		t.Fatalf("%d completes accepted for %d instances, want %d each once: %v", total, len(completed), n, completed)
	}
	for id := range ids {
		v := f.waitEnded(t, id)
		if got := completed[id]; len(got) != 1 || v.Variables["by"] != got[0] {
			t.Errorf("instance %s: completes %v, by %v", id, got, v.Variables["by"])
		}
	}
}

// post sends a JSON body and decodes the answer, which must have status
// want; for the workers' goroutines, which may not call t.Fatal.
func post[T any](f *fixture, path string, body any, want int) (T, error) {
	return postWith[T](http.DefaultClient, f, path, body, want)
}

func postWith[T any](c *http.Client, f *fixture, path string, body any, want int) (T, error) {
	var out T
	b, _ := json.Marshal(body)
	resp, err := c.Post(f.srv.URL+camunda7.Prefix+path, "application/json", bytes.NewReader(b))
	if err != nil {
		return out, err
	}
	defer resp.Body.Close()
	var raw json.RawMessage
	_ = json.NewDecoder(resp.Body).Decode(&raw)
	if resp.StatusCode != want {
		return out, fmt.Errorf("POST %s: %d %s, want %d", path, resp.StatusCode, raw, want)
	}
	if len(raw) > 0 {
		err = json.Unmarshal(raw, &out)
	}
	return out, err
}
