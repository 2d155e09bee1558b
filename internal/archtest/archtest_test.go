package archtest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// root is the module's directory.
const root = "../.."

// pkg is one package of the module: its directory (relative to root) and
// its non-test files, parsed.
type pkg struct {
	dir   string
	name  string
	files map[string]*ast.File
}

func packages(t *testing.T) []pkg {
	t.Helper()
	var out []pkg
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		if n := d.Name(); p != root && (strings.HasPrefix(n, ".") || n == "testdata" || n == "examples" || n == "bin") {
			return filepath.SkipDir
		}
		ents, err := os.ReadDir(p)
		if err != nil {
			return err
		}
		pk := pkg{files: map[string]*ast.File{}}
		for _, e := range ents {
			n := e.Name()
			if e.IsDir() || !strings.HasSuffix(n, ".go") || strings.HasSuffix(n, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(fset, filepath.Join(p, n), nil, parser.ParseComments)
			if err != nil {
				return err
			}
			pk.files[n] = f
			pk.name = f.Name.Name
		}
		if len(pk.files) > 0 {
			pk.dir, _ = filepath.Rel(root, p)
			out = append(out, pk)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) < 20 {
		t.Fatalf("found %d packages under %s, want cwm's", len(out), root)
	}
	return out
}

// Every package says what it is for in a doc comment (STYLE.md 13).
func TestPackagesDocumented(t *testing.T) {
	for _, p := range packages(t) {
		doc := ""
		for _, f := range p.files {
			if f.Doc != nil {
				doc = f.Doc.Text()
			}
		}
		want := "Package " + p.name + " "
		if p.name == "main" {
			want = "Command "
		}
		if !strings.HasPrefix(doc, want) {
			t.Errorf("%s has no doc comment starting %q", p.dir, want)
		}
	}
}

// docs/architecture.md, the package map, names every package.
func TestMapNamesEveryPackage(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(root, "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range packages(t) {
		if !strings.Contains(string(b), p.dir+"/") {
			t.Errorf("docs/architecture.md does not name %s/", p.dir)
		}
	}
}

// imports returns the cwm packages the package imports, by directory.
func (p pkg) imports() []string {
	var out []string
	for _, f := range p.files {
		for _, s := range f.Imports {
			path, _ := strconv.Unquote(s.Path.Value)
			if rest, ok := strings.CutPrefix(path, "cwm/"); ok && !slices.Contains(out, rest) {
				out = append(out, rest)
			}
		}
	}
	return out
}

// The stages use environments through internal/env; only the commands and
// the builder's own tests import the builder.
func TestStagesDoNotImportTheBuilder(t *testing.T) {
	for _, p := range packages(t) {
		if p.dir == "internal/cli" || p.dir == "internal/envbuild" {
			continue
		}
		if slices.Contains(p.imports(), "internal/envbuild") {
			t.Errorf("%s imports internal/envbuild: stages read environments through internal/env", p.dir)
		}
	}
}

// The seam for a second sandbox backend: outside the sandbox, only
// internal/env (the store, which keeps the layers) makes a sandbox
// configuration with layers, and only the builder, the store, envoci
// (which packs and unpacks layers to ship them) and the commands (env
// show prints it) ask where a layer is on the host. The
// sandbox's own command line stacks the directories its user names, and
// the tracer's pool passes on the layers its caller gives it (an
// interpreter laid over a base, in the tests of other Pythons) as it
// passes on its Base.
func TestLayersStayBehindTheSeam(t *testing.T) {
	mayConfigure := []string{"internal/sandbox", "internal/env", "internal/cli/sandboxcmd", "internal/tracer"}
	for _, p := range packages(t) {
		for name, f := range p.files {
			ast.Inspect(f, func(n ast.Node) bool {
				switch x := n.(type) {
				case *ast.CompositeLit:
					if isSelector(x.Type, "sandbox", "Config") && !slices.Contains(mayConfigure, p.dir) {
						for _, el := range x.Elts {
							if kv, ok := el.(*ast.KeyValueExpr); ok && isIdent(kv.Key, "Layers") {
								t.Errorf("%s/%s makes a sandbox.Config with layers: only internal/env does", p.dir, name)
							}
						}
					}
				case *ast.SelectorExpr:
					if x.Sel.Name == "LayerDir" && !slices.Contains([]string{"internal/env", "internal/envbuild", "internal/envoci", "internal/cli"}, p.dir) {
						t.Errorf("%s/%s asks for a layer's host directory: stages see layers through sandboxes", p.dir, name)
					}
				}
				return true
			})
		}
	}
}

func isSelector(e ast.Expr, pkg, name string) bool {
	s, ok := e.(*ast.SelectorExpr)
	return ok && isIdent(s.X, pkg) && s.Sel.Name == name
}

func isIdent(e ast.Expr, name string) bool {
	id, ok := e.(*ast.Ident)
	return ok && id.Name == name
}
