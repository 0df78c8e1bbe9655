package engine_test

import (
	"os"
	"strings"
	"testing"

	"github.com/jetbpm/jetbpm/streams/streamstest"
)

// TestMain lets this test binary double as a NATS cluster node: the
// cluster tests start it again as one and SIGKILL it. It also sets the
// role passwords ../nats.conf reads from the environment, once for the
// whole binary, so the tests that run nats.conf can run in parallel.
func TestMain(m *testing.M) {
	streamstest.ServeNodeIfAsked()
	for _, role := range []string{"engine", "worker", "integration", "operator", "tasklist"} {
		os.Setenv("JETBPM_"+strings.ToUpper(role)+"_PASSWORD", role+"-secret")
	}
	os.Exit(m.Run())
}
