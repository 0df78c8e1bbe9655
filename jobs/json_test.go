package jobs

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestPolicyJSONUsesMilliseconds(t *testing.T) {
	p := Policy{
		Trust: WorkerTrusted, Retry: ExponentialSpec(4, 250*time.Millisecond, 8*time.Second, 0.1),
		Rules:        []Rule{{Code: "404", Outcome: BusinessStatus, Value: "NOT_FOUND"}},
		Status:       "lookup",
		LockDuration: 90 * time.Second, MaxLockDuration: 10 * time.Minute,
	}
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"lockDurationMs":90000`, `"maxLockDurationMs":600000`, `"baseMs":250`, `"capMs":8000`, `"maxAttempts":4`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("%s lacks %s", b, want)
		}
	}
	var back Policy
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, p) {
		t.Fatalf("round trip:\n got %+v\nwant %+v", back, p)
	}
}
