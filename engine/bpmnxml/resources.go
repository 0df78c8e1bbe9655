package bpmnxml

import (
	"bytes"
	"fmt"
	"io"
	"path"
	"strings"

	"github.com/jetbpm/jetbpm/engine/model"
	"github.com/jetbpm/jetbpm/script"
)

// Resources are the other files of a deployment, by name, that a BPMN
// document may load scripts from (camunda:resource="deployment://NAME").
type Resources map[string][]byte

// ParseIn is Parse for a document deployed together with resources: a
// JavaScript script task or parameter with camunda:resource naming one
// of them runs that file's text. jetbpm has no classpath: a resource on
// Camunda 7's classpath (no scheme, or classpath://) is the deployment's
// file of that path, or else of that base name; without one it is
// refused.
func ParseIn(r io.Reader, resources Resources) ([]*model.Process, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxSize+1))
	if err != nil {
		return nil, fmt.Errorf("reading BPMN document: %w", err)
	}
	if len(data) > MaxSize {
		return nil, &Error{Msg: fmt.Sprintf("document is larger than %d MiB; refused", MaxSize>>20)}
	}
	root, err := readTree(data)
	if err != nil {
		return nil, err
	}
	return importDefinitions(root, resources)
}

// IsDocument reports whether data looks like an XML document (a BPMN file
// of a deployment) rather than a resource (a script): its first byte past
// white space and a byte-order mark is '<'.
func IsDocument(data []byte) bool {
	data = bytes.TrimLeft(bytes.TrimPrefix(data, []byte("\xef\xbb\xbf")), " \t\r\n")
	return len(data) > 0 && data[0] == '<'
}

// scriptResource returns the text of the deployment resource that
// camunda:resource value names ("deployment://calc.js"), refusing what
// cannot be read here; ok is false when a problem was reported on e.
func (im *importer) scriptResource(owner, e *elem, value string) (text string, ok bool) {
	name, deployment := strings.CutPrefix(strings.TrimSpace(value), "deployment://")
	var data []byte
	found := false
	if deployment {
		data, found = im.resources[name]
	} else {
		name = strings.TrimPrefix(name, "classpath://")
		data, found = im.classpath(name)
	}
	switch {
	case !found && deployment:
		im.probs.in(owner, e, "camunda:resource %q: no file %q in this deployment", value, name)
		return "", false
	case !found:
		im.probs.in(owner, e, "camunda:resource %q is on Camunda 7's classpath, which jetbpm does not have: deploy %s with the BPMN file", value, path.Base(name))
		return "", false
	}
	if text = strings.TrimSpace(string(data)); text == "" {
		im.probs.in(owner, e, "camunda:resource %q: the script is empty", value)
		return "", false
	}
	return text, true
}

// jsCondition returns the text of condition element c of e when its
// language is JavaScript (js), reporting an empty one.
func (im *importer) jsCondition(e, c *elem) (src string, js bool) {
	if !script.IsJavaScript(c.attr("", "language")) {
		return "", false
	}
	if src = strings.TrimSpace(c.text); src == "" {
		im.probs.in(e, c, "the condition is empty")
	}
	return src, true
}

// classpath finds the deployment's file that stands in for classpath
// resource name: the file of that path, else the one file of its base
// name.
func (im *importer) classpath(name string) ([]byte, bool) {
	if data, ok := im.resources[name]; ok {
		return data, true
	}
	var found []byte
	n := 0
	for file, data := range im.resources {
		if path.Base(file) == path.Base(name) {
			found, n = data, n+1
		}
	}
	return found, n == 1
}
