package camunda8_test

import (
	"context"
	"errors"
	"hash/fnv"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetbpm/jetbpm/engine/camunda8"
	"github.com/jetbpm/jetbpm/streams/streamstest"
)

func bucket(t *testing.T) jetstream.KeyValue {
	t.Helper()
	env := streamstest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	kv, err := env.JS.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "c8keys-test"})
	if err != nil {
		t.Fatal(err)
	}
	return kv
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// partitionOf4 places an id on one of 4 partitions by its hash.
func partitionOf4(id string) int {
	h := fnv.New32a()
	h.Write([]byte(id))
	return int(h.Sum32() % 4)
}

// Allocators on several nodes never hand out a number twice, and a new
// allocator (a restart) goes on after the blocks already reserved.
func TestAllocatorUnique(t *testing.T) {
	kv := bucket(t)
	ctx := testCtx(t)
	var mu sync.Mutex
	seen := map[int64]bool{}
	var wg sync.WaitGroup
	for range 3 {
		a := camunda8.NewAllocator(kv)
		wg.Go(func() {
			for range 1500 {
				n, err := a.Next(ctx)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				if seen[n] {
					t.Errorf("number %d handed out twice", n)
				}
				seen[n] = true
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	top := int64(0)
	for n := range seen {
		top = max(top, n)
	}
	n, err := camunda8.NewAllocator(kv).Next(ctx)
	if err != nil || n <= top {
		t.Fatalf("a restarted allocator gave %d (%v), want past %d", n, err, top)
	}
}

func TestInstanceKeys(t *testing.T) {
	kv := bucket(t)
	ctx := testCtx(t)
	ids := camunda8.NewIDs(kv, 4, partitionOf4)

	// An instance a Camunda 8 client creates: its id is its key's text,
	// on the partition the engine places that id on.
	k, id, err := ids.NewInstance(ctx)
	if err != nil || id != k.String() || k.Partition() != partitionOf4(id)+1 {
		t.Fatalf("NewInstance = %d %q (%v)", k, id, err)
	}
	if got, err := ids.InstanceKey(ctx, id); err != nil || got != k {
		t.Errorf("InstanceKey(%q) = %d (%v), want %d", id, got, err, k)
	}
	if got, err := ids.Instance(ctx, k); err != nil || got != id {
		t.Errorf("Instance(%d) = %q (%v)", k, got, err)
	}

	// Any other id gets a key once, kept both ways, on its partition.
	k1, err := ids.InstanceKey(ctx, "order-1")
	if err != nil || k1.Partition() != partitionOf4("order-1")+1 {
		t.Fatalf("InstanceKey(order-1) = %d (%v)", k1, err)
	}
	other := camunda8.NewIDs(kv, 4, partitionOf4) // another node
	if k2, err := other.InstanceKey(ctx, "order-1"); err != nil || k2 != k1 {
		t.Errorf("the other node keyed order-1 as %d (%v), want %d", k2, err, k1)
	}
	if got, err := other.Instance(ctx, k1); err != nil || got != "order-1" {
		t.Errorf("Instance(%d) = %q (%v), want order-1", k1, got, err)
	}

	// A key whose partition cannot hold its instance is refused.
	wrong, _ := camunda8.NewKey(k.Partition()%4+1, k.Number())
	if _, err := ids.Instance(ctx, wrong); !errors.Is(err, camunda8.ErrBadKey) {
		t.Errorf("Instance(%d) of the wrong partition: %v, want ErrBadKey", wrong, err)
	}
}

// Two nodes keying one id at once agree on one key.
func TestInstanceKeyRace(t *testing.T) {
	kv := bucket(t)
	ctx := testCtx(t)
	for i := range 20 {
		id := "race-" + string(rune('a'+i))
		var keys [2]camunda8.Key
		var wg sync.WaitGroup
		for j := range keys {
			m := camunda8.NewIDs(kv, 4, partitionOf4)
			wg.Go(func() {
				k, err := m.InstanceKey(ctx, id)
				if err != nil {
					t.Error(err)
				}
				keys[j] = k
			})
		}
		wg.Wait()
		if keys[0] != keys[1] {
			t.Fatalf("%s keyed %d and %d", id, keys[0], keys[1])
		}
	}
}

// A process version gets one key, on partition 1, that finds it again; a
// key of another kind names no definition.
func TestDefinitionKeys(t *testing.T) {
	kv := bucket(t)
	ctx := testCtx(t)
	ids := camunda8.NewIDs(kv, 4, partitionOf4)
	k, err := ids.DefinitionKey(ctx, "order.v2 process", 3)
	if err != nil || k.Partition() != 1 {
		t.Fatalf("DefinitionKey = %d (%v)", k, err)
	}
	if again, err := camunda8.NewIDs(kv, 4, partitionOf4).DefinitionKey(ctx, "order.v2 process", 3); err != nil || again != k {
		t.Errorf("the same version keyed again as %d (%v), want %d", again, err, k)
	}
	if other, _ := ids.DefinitionKey(ctx, "order.v2 process", 4); other == k {
		t.Errorf("versions 3 and 4 share key %d", k)
	}
	if p, v, err := ids.Definition(ctx, k); err != nil || p != "order.v2 process" || v != 3 {
		t.Errorf("Definition(%d) = %q %d (%v)", k, p, v, err)
	}
	ik, _ := ids.InstanceKey(ctx, "order-9")
	if _, _, err := ids.Definition(ctx, ik); !errors.Is(err, camunda8.ErrBadKey) {
		t.Errorf("an instance key as a definition: %v, want ErrBadKey", err)
	}
	if _, err := ids.Instance(ctx, k); !errors.Is(err, camunda8.ErrBadKey) {
		t.Errorf("a definition key as an instance: %v, want ErrBadKey", err)
	}
}

// An incident's key is stable, on its instance's partition, and names only
// that incident.
func TestIncidentKeys(t *testing.T) {
	kv := bucket(t)
	ctx := testCtx(t)
	ids := camunda8.NewIDs(kv, 4, partitionOf4)
	k, err := ids.IncidentKey(ctx, "order-9/charge/2", "order-9")
	if err != nil || k.Partition() != partitionOf4("order-9")+1 {
		t.Fatalf("IncidentKey = %d (%v)", k, err)
	}
	if again, err := camunda8.NewIDs(kv, 4, partitionOf4).IncidentKey(ctx, "order-9/charge/2", "order-9"); err != nil || again != k {
		t.Errorf("the incident keyed again as %d (%v), want %d", again, err, k)
	}
	if id, err := camunda8.NewIDs(kv, 4, partitionOf4).Incident(ctx, k); err != nil || id != "order-9/charge/2" {
		t.Errorf("Incident(%d) = %q (%v)", k, id, err)
	}
	ik, _ := ids.InstanceKey(ctx, "order-9")
	if _, err := ids.Incident(ctx, ik); !errors.Is(err, camunda8.ErrBadKey) {
		t.Errorf("an instance key as an incident: %v, want ErrBadKey", err)
	}
	if _, err := ids.Instance(ctx, k); !errors.Is(err, camunda8.ErrBadKey) {
		t.Errorf("an incident key as an instance: %v, want ErrBadKey", err)
	}
	unknown, _ := camunda8.NewKey(1, 999_999)
	if _, err := ids.Incident(ctx, unknown); !errors.Is(err, camunda8.ErrBadKey) {
		t.Errorf("an unknown key: %v, want ErrBadKey", err)
	}
}

// A user task's and a variable's keys are kept as an incident's: stable,
// on the instance's partition, and of their own kind.
func TestTaskAndVariableKeys(t *testing.T) {
	kv := bucket(t)
	ctx := testCtx(t)
	ids := camunda8.NewIDs(kv, 4, partitionOf4)
	tk, err := ids.TaskKey(ctx, "order-9/approve/3", "order-9")
	if err != nil || tk.Partition() != partitionOf4("order-9")+1 {
		t.Fatalf("TaskKey = %d (%v)", tk, err)
	}
	if id, err := camunda8.NewIDs(kv, 4, partitionOf4).Task(ctx, tk); err != nil || id != "order-9/approve/3" {
		t.Errorf("Task(%d) = %q (%v)", tk, id, err)
	}
	vk, err := ids.VariableKey(ctx, "order-9", "total amount")
	if err != nil || vk == tk {
		t.Fatalf("VariableKey = %d (%v)", vk, err)
	}
	if again, _ := camunda8.NewIDs(kv, 4, partitionOf4).VariableKey(ctx, "order-9", "total amount"); again != vk {
		t.Errorf("the variable keyed again as %d, want %d", again, vk)
	}
	if inst, name, err := ids.Variable(ctx, vk); err != nil || inst != "order-9" || name != "total amount" {
		t.Errorf("Variable(%d) = %q %q (%v)", vk, inst, name, err)
	}
	if _, err := ids.Task(ctx, vk); !errors.Is(err, camunda8.ErrBadKey) {
		t.Errorf("a variable key as a task: %v, want ErrBadKey", err)
	}
	if _, _, err := ids.Variable(ctx, tk); !errors.Is(err, camunda8.ErrBadKey) {
		t.Errorf("a task key as a variable: %v, want ErrBadKey", err)
	}
}
