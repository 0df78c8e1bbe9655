package console_test

import (
	"net/http"

	"github.com/jetbpm/jetbpm/engine/httpapi"
	"github.com/jetbpm/jetbpm/internal/httpauth"
)

// listener is the node's HTTP handler as serve builds it: /v1 and the
// console at /, both behind auth (nil: off, every caller an operator).
func (f *fixture) listener(auth *httpauth.Authenticator) http.Handler {
	srv := httpapi.New(auth)
	srv.SetEngine(f.eng)
	srv.Handle("/", f.console)
	return srv
}
