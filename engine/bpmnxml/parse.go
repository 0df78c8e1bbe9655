package bpmnxml

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"unicode/utf8"

	"github.com/jetbpm/jetbpm/engine/model"
)

// Namespaces the importer dispatches on. Prefixes are irrelevant: elements
// and attributes are matched by namespace URI and local name.
const (
	NamespaceBPMN    = "http://www.omg.org/spec/BPMN/20100524/MODEL"
	NamespaceCamunda = "http://camunda.org/schema/1.0/bpmn"
	NamespaceZeebe   = "http://camunda.org/schema/zeebe/1.0"
	// Namespace is jetbpm's own extension namespace (see the package doc).
	Namespace = "https://jetbpm.dev/schema/bpmn/1.0"

	nsBPMNDI = "http://www.omg.org/spec/BPMN/20100524/DI"
)

// MaxSize is the largest document Parse accepts, in bytes.
const MaxSize = 10 << 20

// maxDepth bounds element nesting (sub-processes inside sub-processes, ...).
const maxDepth = 200

// maxElements bounds the elements kept outside diagram interchange; real
// processes have a few thousand at most.
const maxElements = 200000

// Parse reads one BPMN 2.0 definitions document and returns its executable
// processes, each validated with model.Process.Validate, with the XML line of
// every node and flow. Every problem found (up to 20) is returned, joined:
// *Error values for import problems, *model.Error values for validation.
func Parse(r io.Reader) ([]*model.Process, error) { return ParseIn(r, nil) }

// ParseFile is Parse on the named file; every error line starts with path.
func ParseFile(path string) ([]*model.Process, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	ps, err := Parse(f)
	if err != nil {
		return nil, &fileError{path: path, err: err}
	}
	return ps, nil
}

// elem is one XML element with the line its start tag begins on. Character
// data directly inside it is concatenated in text.
type elem struct {
	name     xml.Name
	attrs    []xml.Attr
	line     int
	children []*elem
	text     string
}

var prefixes = map[string]string{
	NamespaceBPMN:    "bpmn:",
	NamespaceCamunda: "camunda:",
	NamespaceZeebe:   "zeebe:",
	Namespace:        "jetbpm:",
}

// tag is the element's name with the canonical prefix of its namespace.
func (e *elem) tag() string { return qualify(e.name) }

func qualify(n xml.Name) string {
	if p, ok := prefixes[n.Space]; ok {
		return p + n.Local
	}
	return n.Local
}

// attr returns the value of attribute space:local; "" when absent. Unprefixed
// BPMN attributes have no namespace, but a bpmn:-prefixed one is accepted too.
func (e *elem) attr(space, local string) string {
	v, _ := e.lookup(space, local)
	return v
}

func (e *elem) lookup(space, local string) (string, bool) {
	for _, a := range e.attrs {
		if a.Name.Local == local && (a.Name.Space == space || space == "" && a.Name.Space == NamespaceBPMN) {
			return a.Value, true
		}
	}
	return "", false
}

func (e *elem) is(space, local string) bool { return e.name.Space == space && e.name.Local == local }

// readTree decodes data into an element tree, tracking the line each start
// tag begins on. Diagram interchange (bpmndi) subtrees are skipped.
func readTree(data []byte) (*elem, error) {
	d := xml.NewDecoder(bytes.NewReader(data))
	d.CharsetReader = charsetReader
	var (
		stack []*elem
		root  *elem
		skip  int // depth inside a skipped subtree
		count int
		text  [][]byte // character data of each open element
	)
	for {
		line, _ := d.InputPos() // the next token starts here
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, malformed(err, line)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			if skip > 0 || t.Name.Space == nsBPMNDI {
				skip++
				continue
			}
			if len(stack) >= maxDepth {
				return nil, &Error{Line: line, Element: qualify(t.Name), Msg: fmt.Sprintf("elements are nested more than %d deep; refused", maxDepth)}
			}
			if count++; count > maxElements {
				return nil, &Error{Line: line, Msg: fmt.Sprintf("the document has more than %d elements; refused", maxElements)}
			}
			e := &elem{name: t.Name, attrs: t.Attr, line: line}
			if len(stack) == 0 {
				if root != nil {
					return nil, &Error{Line: line, Msg: "malformed XML: more than one root element"}
				}
				root = e
			} else {
				p := stack[len(stack)-1]
				p.children = append(p.children, e)
			}
			stack = append(stack, e)
			text = append(text, nil)
		case xml.EndElement:
			if skip > 0 {
				skip--
				continue
			}
			n := len(stack) - 1
			stack[n].text = string(text[n])
			stack, text = stack[:n], text[:n]
		case xml.CharData:
			if skip == 0 && len(stack) > 0 {
				text[len(text)-1] = append(text[len(text)-1], t...)
			}
		}
	}
	if root == nil {
		return nil, &Error{Line: 1, Msg: "malformed XML: no root element"}
	}
	return root, nil
}

func malformed(err error, line int) error {
	var se *xml.SyntaxError
	if errors.As(err, &se) {
		return &Error{Line: se.Line, Msg: "malformed XML: " + se.Msg}
	}
	return &Error{Line: line, Msg: "malformed XML: " + err.Error()}
}

// charsetReader accepts the encodings besides UTF-8 that BPMN tools write.
func charsetReader(charset string, in io.Reader) (io.Reader, error) {
	switch strings.ToLower(charset) {
	case "utf-8", "utf8", "us-ascii", "ascii":
		return in, nil
	case "iso-8859-1", "latin1", "latin-1", "iso_8859-1":
		b, err := io.ReadAll(in)
		if err != nil {
			return nil, err
		}
		out := make([]byte, 0, len(b))
		for _, c := range b {
			out = utf8.AppendRune(out, rune(c))
		}
		return bytes.NewReader(out), nil
	}
	return nil, fmt.Errorf("encoding %q is not supported (use UTF-8)", charset)
}
