package layering_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"strings"
	"testing"
)

// rule: no package under from (itself included) may depend on a package under any of forbidden:
// its code neither directly nor through other packages of the module, its tests not directly.
// Paths are relative to the module.
type rule struct {
	from      string
	forbidden []string
	why       string
}

var rules = []rule{
	{"sdk", []string{"host", "plugins"}, "the SDK is what engine authors build on; it knows nothing of the host or of the product plugins"},
	{"plugins", []string{"host/store", "host/app"}, "a plugin reaches the host only through the plugin protocol (sdk/engine), never its database or its wiring"},
	{"host/store", []string{"host/kb", "host/api", "host/runs"}, "the store keeps records; search policy, routes and run logic sit above it (its conformance suite too)"},
	{"internal", []string{"host", "plugins"}, "internal/ is code shared by the host and the engine plugins (the external tools' client, the SSRF guard, the renderer): it depends on neither"},
}

// Measurement lives apart from the product, in bench/: the bench program (bench, which may
// build the whole host) and its harnesses (bench/<area>bench, each measuring one area below the
// API and the wiring). No package outside bench/ depends on one, code or tests.
const benchTree = "bench"

// harnessForbidden: a harness measures its own area; what goes through the API or the wiring is
// the bench program's to measure.
var harnessForbidden = []string{"host/api", "host/app"}

// pkg is what `go list -json` says of one package of the module.
type pkg struct {
	ImportPath   string
	Imports      []string
	TestImports  []string
	XTestImports []string
}

func under(p, prefix string) bool { return p == prefix || strings.HasPrefix(p, prefix+"/") }

func isHarness(p string) bool { return under(p, benchTree) && p != benchTree }

// listModule returns the module's packages by path relative to the module, with their imports
// (test imports included) reduced to the module's own packages.
func listModule(t *testing.T) (prod, test map[string][]string) {
	t.Helper()
	mod, err := exec.Command("go", "list", "-m").Output()
	if err != nil {
		t.Fatalf("go list -m: %v", err)
	}
	prefix := strings.TrimSpace(string(mod)) + "/"
	root, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}").Output()
	if err != nil {
		t.Fatalf("go list -m: %v", err)
	}
	cmd := exec.Command("go", "list", "-e", "-json=ImportPath,Imports,TestImports,XTestImports", "./...")
	cmd.Dir = strings.TrimSpace(string(root))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list ./...: %v\n%s", err, stderr.String())
	}
	rel := func(in []string) []string {
		var o []string
		for _, p := range in {
			if r, ok := strings.CutPrefix(p, prefix); ok {
				o = append(o, r)
			}
		}
		return o
	}
	prod, test = map[string][]string{}, map[string][]string{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p pkg
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		name, ok := strings.CutPrefix(p.ImportPath, prefix)
		if !ok {
			continue // the module's root package, if any, and nothing else
		}
		prod[name] = rel(p.Imports)
		test[name] = rel(append(p.TestImports, p.XTestImports...))
	}
	if len(prod) < 10 {
		t.Fatalf("go list found %d packages of %s; the check would prove nothing", len(prod), prefix)
	}
	return prod, test
}

// reach returns every module package start depends on, each with the chain that leads to it.
func reach(prod map[string][]string, start []string) map[string][]string {
	chain := map[string][]string{}
	queue := []string{}
	for _, s := range start {
		if _, seen := chain[s]; !seen {
			chain[s] = []string{s}
			queue = append(queue, s)
		}
	}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, d := range prod[p] {
			if _, seen := chain[d]; !seen {
				chain[d] = append(append([]string{}, chain[p]...), d)
				queue = append(queue, d)
			}
		}
	}
	return chain
}

func TestImportRules(t *testing.T) {
	prod, test := listModule(t)
	// A package's code is checked with everything it depends on; its tests by what they import
	// themselves (a plugin's test may drive the plugin through a host package the rules allow it,
	// whatever that package is built on).
	check := func(p, kind string, imports []string, forbidden []string, why string) {
		deps := reach(prod, imports)
		if kind == "tests" {
			deps = map[string][]string{}
			for _, d := range imports {
				deps[d] = []string{d}
			}
		}
		for dep, via := range deps {
			for _, f := range forbidden {
				if under(dep, f) {
					t.Errorf("%s (%s) depends on %s: %s -> %s\n\t(%s)", p, kind, dep, p, strings.Join(via, " -> "), why)
				}
			}
		}
	}
	for p := range prod {
		for _, r := range rules {
			if under(p, r.from) {
				check(p, "code", prod[p], r.forbidden, r.why)
				check(p, "tests", test[p], r.forbidden, r.why)
			}
		}
		if isHarness(p) {
			check(p, "code", prod[p], harnessForbidden, "a bench harness measures its own area")
			check(p, "tests", test[p], harnessForbidden, "a bench harness measures its own area")
		}
		if !under(p, benchTree) {
			check(p, "code", prod[p], []string{benchTree}, "measurement lives apart: the product never depends on bench/")
			check(p, "tests", test[p], []string{benchTree}, "measurement lives apart: the product never depends on bench/")
		}
	}
}
