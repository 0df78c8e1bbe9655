package api

import (
	"context"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// apiDoc is the page a client in any language is written from.
const apiDoc = "../../docs/api.md"

// TestDocListsEveryOperation keeps docs/api.md and the server in step: the
// operations documented are exactly those Handler.Do handles.
func TestDocListsEveryOperation(t *testing.T) {
	t.Parallel()
	doc := readAPIDoc(t)
	documented := docOperations(doc)
	handled := dispatchedOperations(t)
	if len(handled) == 0 {
		t.Fatal("found no operations in (*Handler).Do")
	}
	for _, op := range handled {
		if !slices.Contains(documented, op) {
			t.Errorf("operation %q is served but %s has no \"### `%s`\" section", op, apiDoc, op)
		}
	}
	for _, op := range documented {
		if !slices.Contains(handled, op) {
			t.Errorf("%s documents operation %q, which the server does not handle", apiDoc, op)
		}
	}

	// And at run time: a documented operation gets past the dispatch (here
	// to the decoding of a body that is not an object); anything else is an
	// unknown operation.
	h := &Handler{}
	for _, op := range documented {
		_, err := h.Do(context.Background(), op, []byte("[]"))
		if err == nil || strings.Contains(err.Error(), "unknown operation") {
			t.Errorf("Do(%q) = %v; want a decoding error", op, err)
		}
	}
	if _, err := h.Do(context.Background(), "instance.explode", []byte("{}")); err == nil || !strings.Contains(err.Error(), "unknown operation") {
		t.Errorf("Do of an unknown operation = %v", err)
	}
}

// TestDocListsEveryErrorCode checks the doc's table of error codes against
// the codes the server sends.
func TestDocListsEveryErrorCode(t *testing.T) {
	t.Parallel()
	doc := readAPIDoc(t)
	const marker = "<!-- error codes:"
	_, table, ok := strings.Cut(doc, marker)
	if !ok {
		t.Fatalf("%s has no %q marker before its error codes", apiDoc, marker)
	}
	var documented []string
	for i, line := range strings.Split(table, "\n")[1:] {
		if !strings.HasPrefix(line, "|") {
			break
		}
		if i < 2 {
			continue // the header and the separator
		}
		cell := strings.TrimSpace(strings.Split(line, "|")[1])
		documented = append(documented, strings.Trim(cell, "`"))
	}
	var sent []string
	for _, c := range codes {
		sent = append(sent, c.code)
	}
	sent = append(sent, toError(errors.New("anything else")).Code)
	slices.Sort(documented)
	slices.Sort(sent)
	if !slices.Equal(documented, sent) {
		t.Errorf("%s documents the error codes %v; the server sends %v", apiDoc, documented, sent)
	}
}

func readAPIDoc(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(apiDoc)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// docOperations returns the operations of the doc's "### `op`" headings.
func docOperations(doc string) []string {
	var ops []string
	for _, m := range regexp.MustCompile("(?m)^### `([a-zA-Z.]+)`$").FindAllStringSubmatch(doc, -1) {
		ops = append(ops, m[1])
	}
	return ops
}

// dispatchedOperations reads this package's source: the string constants
// named in the case clauses of (*Handler).Do, the server's table of
// operations.
func dispatchedOperations(t *testing.T) []string {
	t.Helper()
	fset := token.NewFileSet()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	consts := map[string]string{}
	var dispatch *ast.FuncDecl
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range f.Decls {
			switch d := decl.(type) {
			case *ast.GenDecl:
				if d.Tok != token.CONST {
					continue
				}
				for _, spec := range d.Specs {
					vs := spec.(*ast.ValueSpec)
					for i, id := range vs.Names {
						if i < len(vs.Values) {
							if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
								consts[id.Name], _ = strconv.Unquote(lit.Value)
							}
						}
					}
				}
			case *ast.FuncDecl:
				if d.Name.Name == "Do" && d.Recv != nil {
					dispatch = d
				}
			}
		}
	}
	if dispatch == nil {
		t.Fatal("no (*Handler).Do in this package")
	}
	var ops []string
	ast.Inspect(dispatch.Body, func(n ast.Node) bool {
		cc, ok := n.(*ast.CaseClause)
		if !ok {
			return true
		}
		for _, e := range cc.List {
			var v string
			id, ok := e.(*ast.Ident)
			if ok {
				v, ok = consts[id.Name]
			}
			if !ok {
				t.Errorf("dispatch: case at %s is not one of this package's string constants", fset.Position(e.Pos()))
				continue
			}
			ops = append(ops, v)
		}
		return true
	})
	return ops
}
