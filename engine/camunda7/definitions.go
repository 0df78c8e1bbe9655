package camunda7

import (
	"fmt"
	"net/http"

	"github.com/jetbpm/jetbpm/engine"
)

// listDefinitions lists every deployed process's latest version.
func (h *Handler) listDefinitions(r *http.Request) ([]processDefinition, error) {
	return nil, fmt.Errorf("%w: GET /process-definition needs a key (key=<processId>) in this build", engine.ErrInvalid)
}
