package timerstarts

import (
	"testing"
	"time"
)

// A fire's instance id is the same for every delivery and node, and
// differs when process, version or due time does: a redelivered fire
// starts nothing twice, and no two fires share an instance.
func TestInstanceIDNamesOneFire(t *testing.T) {
	t.Parallel()
	due := time.Date(2026, 12, 6, 9, 0, 0, 0, time.UTC)
	id := InstanceID("billing", 3, due)
	if again := InstanceID("billing", 3, due.In(time.FixedZone("CET", 3600))); again != id {
		t.Fatalf("the same fire in another zone: %s, want %s", again, id)
	}
	for _, other := range []string{
		InstanceID("billing", 4, due),
		InstanceID("billing", 3, due.Add(time.Nanosecond)),
		InstanceID("billings", 3, due),
		InstanceID("bill", 3, due), // no concatenation ambiguity
	} {
		if other == id {
			t.Fatalf("two fires share instance id %s", id)
		}
	}
	if len(id) != 33 || id[0] != 't' {
		t.Fatalf("instance id %q: want t and 32 hex digits", id)
	}
}
