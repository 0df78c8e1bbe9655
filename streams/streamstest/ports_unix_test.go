//go:build unix

package streamstest

import "testing"

// A port FreePort handed out is reserved until its test ends: another
// reservation of it, from this process or another, is refused, and
// taken once released.
func TestFreePortReservesUntilTheTestEnds(t *testing.T) {
	var port int
	t.Run("holder", func(t *testing.T) {
		port = FreePort(t)
		if _, ok := reservePort(port); ok {
			t.Fatalf("port %d reserved twice", port)
		}
	})
	release, ok := reservePort(port)
	if !ok {
		t.Fatalf("port %d still reserved after its test ended", port)
	}
	release()
}
