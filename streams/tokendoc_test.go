package streams

import (
	"bufio"
	"fmt"
	"os"
	"strings"
	"testing"
	"unicode/utf8"
)

// workerProtocolDoc is the page worker authors compute consumer and subject
// names from; its token examples must be what Token returns.
const workerProtocolDoc = "../docs/worker-protocol.md"

// tokenExamplesMarker precedes the table of examples in workerProtocolDoc.
const tokenExamplesMarker = "<!-- token examples:"

// TestWorkerProtocolDocTokenExamples keeps the worker protocol's token rule
// honest: a worker written from the doc must compute the names jetbpm uses.
func TestWorkerProtocolDocTokenExamples(t *testing.T) {
	doc, err := os.ReadFile(workerProtocolDoc)
	if err != nil {
		t.Fatal(err)
	}
	examples, err := tokenExamples(string(doc))
	if err != nil {
		t.Fatalf("%s: %v", workerProtocolDoc, err)
	}
	var unchanged, escaped, nonASCII, empty bool
	for _, ex := range examples {
		got := Token(ex.name)
		if got != ex.token {
			t.Errorf("%s line %d: token(%q) is documented as %q; streams.Token returns %q",
				workerProtocolDoc, ex.line, ex.name, ex.token, got)
		}
		unchanged = unchanged || ex.name != "" && got == ex.name
		escaped = escaped || strings.Contains(ex.name, ".")
		nonASCII = nonASCII || utf8.RuneCountInString(ex.name) < len(ex.name)
		empty = empty || ex.name == ""
	}
	// The table must keep showing each case a worker author needs.
	for what, ok := range map[string]bool{
		"a name that passes unchanged": unchanged,
		"a name with a dot":            escaped,
		"a non-ASCII name":             nonASCII,
		"the empty name":               empty,
	} {
		if !ok {
			t.Errorf("%s: the token examples have no row for %s", workerProtocolDoc, what)
		}
	}
	// The prose states the rule; it must name the escape character Token uses.
	escape := Token(".")[:1]
	if rule := fmt.Sprintf("becomes `%s` followed by two upper-case hex digits", escape); !strings.Contains(string(doc), rule) {
		t.Errorf("%s: the token rule should say every other byte %s", workerProtocolDoc, rule)
	}
	if rule := fmt.Sprintf("the empty\nname becomes `%s`", Token("")); !strings.Contains(string(doc), rule) {
		t.Errorf("%s: the token rule should say %q", workerProtocolDoc, rule)
	}
}

type tokenExample struct {
	name, token string
	line        int
}

// tokenExamples reads the table after tokenExamplesMarker: a header row, a
// separator, then rows "| `name` | `token` |" ("(empty)" for the empty
// name) up to the first line that is not a table row.
func tokenExamples(doc string) ([]tokenExample, error) {
	sc := bufio.NewScanner(strings.NewReader(doc))
	line, inTable, rows := 0, false, -1
	var out []tokenExample
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if !inTable {
			inTable = strings.HasPrefix(text, tokenExamplesMarker)
			continue
		}
		if !strings.HasPrefix(text, "|") {
			break
		}
		if rows++; rows < 2 {
			continue // the header and the separator
		}
		cells := strings.Split(strings.Trim(text, "|"), "|")
		if len(cells) != 2 {
			return nil, fmt.Errorf("line %d: want two cells, got %q", line, text)
		}
		name, err := codeCell(cells[0], true)
		if err != nil {
			return nil, fmt.Errorf("line %d: %v", line, err)
		}
		tok, err := codeCell(cells[1], false)
		if err != nil {
			return nil, fmt.Errorf("line %d: %v", line, err)
		}
		out = append(out, tokenExample{name: name, token: tok, line: line})
	}
	if !inTable {
		return nil, fmt.Errorf("no %q marker before the token examples", tokenExamplesMarker)
	}
	if len(out) < 4 {
		return nil, fmt.Errorf("the token examples table has %d rows; want at least 4", len(out))
	}
	return out, nil
}

// codeCell returns the text of a `code` cell; "(empty)" stands for "" where
// allowed.
func codeCell(cell string, emptyOK bool) (string, error) {
	cell = strings.TrimSpace(cell)
	if emptyOK && cell == "(empty)" {
		return "", nil
	}
	if len(cell) < 3 || cell[0] != '`' || cell[len(cell)-1] != '`' {
		return "", fmt.Errorf("cell %q is not `code`", cell)
	}
	return cell[1 : len(cell)-1], nil
}
