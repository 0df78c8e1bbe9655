package streamstest

import (
	"fmt"
	"math/rand/v2"
	"net"
	"testing"
)

// FreePort returns a loopback TCP port nothing listens on right now, for
// a process the test starts later. It is drawn at random below Linux's
// ephemeral range (32768-60999), so the kernel does not hand the same
// port to another test's listen on port 0 or outgoing connection in the
// moment between this check and the process's listen. Another FreePort,
// in this process or another test binary running at once (go test runs
// packages in parallel), could draw it too: so each port is also
// reserved, where the system allows, until the test ends (a lock on a
// file named after it in the temporary directory, which every FreePort
// tries before it hands a port out).
func FreePort(t testing.TB) int {
	t.Helper()
	const lo, hi = 20000, 32768
	for range 100 {
		port := lo + rand.IntN(hi-lo)
		release, ok := reservePort(port)
		if !ok {
			continue // another test holds it
		}
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			release()
			continue // taken
		}
		l.Close()
		t.Cleanup(release)
		return port
	}
	t.Fatalf("no free port in [%d, %d) after 100 draws", lo, hi)
	return 0
}
