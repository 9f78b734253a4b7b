package layering_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// byHand lists the packages that still open transactions with the driver's method while they move
// to store.InTx. The test fails when one of them no longer needs its entry, so the list only shrinks.
var byHand = []string{}

// TestTransactionsThroughStoreInTx: outside host/store, production code opens a transaction only
// through the function store.InTx, which hands the transaction on as the caller's own narrow store
// interface. The method InTx of a driver (store.Transactor) hands out the whole store.Driver.
func TestTransactionsThroughStoreInTx(t *testing.T) {
	root, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}").Output()
	if err != nil {
		t.Fatalf("go list -m: %v", err)
	}
	dir := strings.TrimSpace(string(root))
	calls := map[string][]string{} // package dir -> positions
	fset := token.NewFileSet()
	files := 0
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if under(rel, "host/store") || strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "node_modules" {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(rel, ".go") || strings.HasSuffix(rel, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		files++
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok || sel.Sel.Name != "InTx" {
				return true
			}
			if id, ok := sel.X.(*ast.Ident); ok && id.Name == "store" {
				return true // the function store.InTx
			}
			pos := fset.Position(call.Pos())
			rp, _ := filepath.Rel(dir, pos.Filename)
			pkg := filepath.ToSlash(filepath.Dir(rp))
			calls[pkg] = append(calls[pkg], filepath.ToSlash(rp)+":"+strconv.Itoa(pos.Line))
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 50 {
		t.Fatalf("read %d Go files under %s; the check would prove nothing", files, dir)
	}
	for pkg, at := range calls {
		if !slices.Contains(byHand, pkg) {
			t.Errorf("%s opens a transaction with a driver's InTx method at %s: use store.InTx(ctx, db, func(tx Store) error {...}) with the package's own Store interface (see host/store's package comment)", pkg, strings.Join(at, ", "))
		}
	}
	for _, pkg := range byHand {
		if len(calls[pkg]) == 0 {
			t.Errorf("%s no longer opens transactions by hand: remove it from byHand in internal/layering/transactions_test.go", pkg)
		}
	}
}
