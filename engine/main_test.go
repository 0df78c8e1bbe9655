package engine_test

import (
	"os"
	"testing"

	"github.com/jetbpm/jetbpm/streams/streamstest"
)

// TestMain lets this test binary double as a NATS cluster node: the
// cluster tests start it again as one and SIGKILL it.
func TestMain(m *testing.M) {
	streamstest.ServeNodeIfAsked()
	os.Exit(m.Run())
}
