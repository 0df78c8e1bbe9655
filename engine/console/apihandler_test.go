package console_test

import (
	"net/http"
	"testing"
)

// TEMPORARY: the HTTP API comes with h-http.
func apiHandler(t *testing.T, f *fixture) http.Handler { return http.NotFoundHandler() }
