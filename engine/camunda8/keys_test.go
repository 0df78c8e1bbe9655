package camunda8

import (
	"errors"
	"math"
	"strings"
	"testing"
)

func TestKeyLayout(t *testing.T) {
	k, err := NewKey(1, 42)
	if err != nil || int64(k) != 1<<51|42 || k.Partition() != 1 || k.Number() != 42 || k.String() != "2251799813685290" {
		t.Fatalf("NewKey(1, 42) = %d (%v): partition %d number %d", k, err, k.Partition(), k.Number())
	}
	// Zeebe's first key of partition 1.
	if k, _ := NewKey(1, 1); k != 2251799813685249 {
		t.Errorf("first key %d, want Zeebe's 2251799813685249", k)
	}
	top, err := NewKey(MaxPartition, MaxCounter)
	if err != nil || int64(top) != math.MaxInt64 {
		t.Errorf("largest key %d (%v), want MaxInt64", top, err)
	}
	for _, c := range []struct {
		p int
		n int64
	}{{0, 1}, {MaxPartition + 1, 1}, {1, -1}, {1, MaxCounter + 1}} {
		if _, err := NewKey(c.p, c.n); !errors.Is(err, ErrBadKey) {
			t.Errorf("NewKey(%d, %d): %v, want ErrBadKey", c.p, c.n, err)
		}
	}
}

func TestJobKey(t *testing.T) {
	k, err := JobKey(3, 12345, 2)
	if err != nil {
		t.Fatal(err)
	}
	seq, count, err := k.Job()
	if err != nil || seq != 12345 || count != 2 || k.Partition() != 3 {
		t.Fatalf("JobKey(3, 12345, 2) = %d: seq %d count %d partition %d (%v)", k, seq, count, k.Partition(), err)
	}
	// Another delivery of the same job is another key.
	if k2, _ := JobKey(3, 12345, 3); k2 == k {
		t.Errorf("deliveries 2 and 3 share key %d", k)
	}
	if k, _ := JobKey(1, 7, 1000); func() bool { _, c, _ := k.Job(); return c != 255 }() {
		t.Errorf("a count over 255 is not kept as 255")
	}
	for _, c := range []struct{ seq, count uint64 }{{0, 1}, {MaxJobSeq + 1, 1}, {5, 0}} {
		if _, err := JobKey(1, c.seq, c.count); !errors.Is(err, ErrBadKey) {
			t.Errorf("JobKey(1, %d, %d): %v, want ErrBadKey", c.seq, c.count, err)
		}
	}
	if _, _, err := Key(1 << 51).Job(); !errors.Is(err, ErrBadKey) {
		t.Errorf("a key with no delivery decodes as a job: %v", err)
	}
}

func TestParseKey(t *testing.T) {
	good, _ := NewKey(2, 99)
	if k, err := ParseKey(int64(good), 4); err != nil || k != good {
		t.Errorf("ParseKey(%d) = %d, %v", good, k, err)
	}
	if k, err := ParseKeyString(good.String(), 4); err != nil || k != good {
		t.Errorf("ParseKeyString(%q) = %d, %v", good, k, err)
	}
	for _, c := range []struct {
		k    int64
		want string
	}{
		{-1, "is negative"},
		{5, "names partition 0"},
		{int64(good), "names partition 2; this engine has partitions 1..1"},
	} {
		parts := 4
		if c.k == int64(good) {
			parts = 1
		}
		if _, err := ParseKey(c.k, parts); !errors.Is(err, ErrBadKey) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ParseKey(%d, %d): %v, want %q", c.k, parts, err, c.want)
		}
	}
	for _, s := range []string{"", "abc", "1e9", "9223372036854775808", " 1", "+" + good.String(), "0" + good.String()} {
		if _, err := ParseKeyString(s, 4); !errors.Is(err, ErrBadKey) {
			t.Errorf("ParseKeyString(%q): %v, want ErrBadKey", s, err)
		}
	}
}

// Any int64 or text decodes to a checked key or an error, never a panic,
// and a valid key round-trips.
func FuzzKey(f *testing.F) {
	f.Add(int64(2251799813685290), "2251799813685290", 4)
	f.Add(int64(-1), "-1", 1)
	f.Add(int64(math.MaxInt64), "x", 4095)
	f.Fuzz(func(t *testing.T, k int64, s string, partitions int) {
		if key, err := ParseKey(k, partitions); err == nil {
			if key.Partition() < 1 || key.Partition() > partitions || int64(key) != k {
				t.Fatalf("ParseKey(%d, %d) = %d", k, partitions, key)
			}
			again, err := NewKey(key.Partition(), key.Number())
			if err != nil || again != key {
				t.Fatalf("%d does not round-trip: %d %v", key, again, err)
			}
			if seq, count, err := key.Job(); err == nil {
				if j, err := JobKey(key.Partition(), seq, count); err != nil || j != key {
					t.Fatalf("job key %d does not round-trip: %d %v", key, j, err)
				}
			}
		}
		if key, err := ParseKeyString(s, partitions); err == nil && key.String() != s {
			t.Fatalf("ParseKeyString(%q) = %s", s, key)
		}
	})
}
