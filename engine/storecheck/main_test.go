package storecheck_test

import (
	"os"
	"testing"

	"github.com/jetbpm/jetbpm/streams/streamstest"
)

// TestMain lets this test binary double as a NATS cluster node, for the
// tests on a replicated store (streamstest.StartCluster).
func TestMain(m *testing.M) {
	streamstest.ServeNodeIfAsked()
	os.Exit(m.Run())
}
