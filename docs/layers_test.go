package docs

import (
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/jetbpm/jetbpm/"

// TestLayers checks the dependency direction architecture.md draws: every
// package of the module is on one layer of its "layers" block, and imports
// only packages of lower layers (an import across or upward fails).
func TestLayers(t *testing.T) {
	data, err := os.ReadFile("architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	layers, err := parseLayers(string(data))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Imports " "}}`, "./...")
	cmd.Dir = ".."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	imports := map[string][]string{}
	for line := range strings.Lines(string(out)) {
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		pkg := strings.TrimPrefix(fields[0], module)
		imports[pkg] = nil
		for _, imp := range fields[1:] {
			if rest, ok := strings.CutPrefix(imp, module); ok {
				imports[pkg] = append(imports[pkg], rest)
			}
		}
	}
	if len(imports) < 20 {
		t.Fatalf("go list found %d packages; the test no longer reads the module", len(imports))
	}
	for _, problem := range checkLayers(layers, imports) {
		t.Error(problem)
	}
}

// TestCheckLayersFindsViolations feeds checkLayers a tree with every kind of
// problem it must report.
func TestCheckLayersFindsViolations(t *testing.T) {
	layers := map[string]int{"engine": 3, "engine/instance": 2, "engine/model": 2, "jobs": 1, "gone": 1}
	imports := map[string][]string{
		"engine":          {"engine/instance", "jobs"}, // down: fine
		"engine/instance": {"engine/model", "engine"},  // across and up
		"engine/model":    {"jobs"},                    // down: fine
		"jobs":            nil,                         // fine
		"engine/new":      {"jobs"},                    // on no layer
	}
	got := checkLayers(layers, imports)
	want := []string{
		`engine/instance (layer 2) imports engine (layer 3): a package imports only lower layers`,
		`engine/instance (layer 2) imports engine/model (layer 2): a package imports only lower layers`,
		`engine/new is on no layer of architecture.md's layers block`,
		`gone is on a layer of architecture.md but is no package of the module`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("checkLayers reported\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// parseLayers reads the "layers" block: lines of a layer number and the
// packages on it.
func parseLayers(doc string) (map[string]int, error) {
	_, block, ok := strings.Cut(doc, "```layers\n")
	if !ok {
		return nil, fmt.Errorf("architecture.md has no ```layers block")
	}
	block, _, _ = strings.Cut(block, "```")
	layers := map[string]int{}
	for line := range strings.Lines(block) {
		fields := strings.Fields(line)
		if len(fields) < 2 {
			return nil, fmt.Errorf("layers line %q: want a number and packages", strings.TrimSpace(line))
		}
		n, err := strconv.Atoi(fields[0])
		if err != nil {
			return nil, fmt.Errorf("layers line %q: %v", strings.TrimSpace(line), err)
		}
		for _, pkg := range fields[1:] {
			if prev, dup := layers[pkg]; dup {
				return nil, fmt.Errorf("package %s is on layers %d and %d", pkg, prev, n)
			}
			layers[pkg] = n
		}
	}
	return layers, nil
}

// checkLayers returns a sentence per problem, sorted.
func checkLayers(layers map[string]int, imports map[string][]string) []string {
	var problems []string
	for pkg, deps := range imports {
		n, ok := layers[pkg]
		if !ok {
			problems = append(problems, pkg+" is on no layer of architecture.md's layers block")
			continue
		}
		for _, dep := range deps {
			if m, ok := layers[dep]; ok && m >= n {
				problems = append(problems, fmt.Sprintf("%s (layer %d) imports %s (layer %d): a package imports only lower layers", pkg, n, dep, m))
			}
		}
	}
	for pkg := range layers {
		if _, ok := imports[pkg]; !ok {
			problems = append(problems, pkg+" is on a layer of architecture.md but is no package of the module")
		}
	}
	sort.Strings(problems)
	return problems
}
