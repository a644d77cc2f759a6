package transcript_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestArchitectureNamesEveryPackage: docs/architecture.md's layout table
// names every package of the repository's modules (the host's and
// the SDK's, shared/) but test support. A row's first cell
// names folders (`egress/`); a package inside a named folder is named too
// when the row names its subfolder (`shared/` ... `wire/`). Test support
// is under internal/testkit/, which no command or plugin links.
func TestArchitectureNamesEveryPackage(t *testing.T) {
	t.Parallel()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to list the module's packages: %v", err)
	}
	listIn := func(dir string, args ...string) []string {
		t.Helper()
		cmd := exec.Command(goTool, append([]string{"list"}, args...)...)
		cmd.Dir = filepath.Join(root, dir)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("go list %s: %v", strings.Join(args, " "), err)
		}
		return strings.Fields(string(out))
	}
	list := func(args ...string) []string { return listIn(".", args...) }
	const mod = "github.com/plugkit-go/plugkit/"
	var mains []string
	for _, line := range list("-f", "{{.Name}}:{{.ImportPath}}", "./...") {
		if name, path, _ := strings.Cut(line, ":"); name == "main" && !strings.HasPrefix(path, mod+"internal/testkit/") {
			mains = append(mains, path)
		}
	}
	linked := list(append([]string{"-deps"}, mains...)...)
	var want []string
	// shared/ is the plugin SDK's module of its own, which the root's ./...
	// does not list.
	for _, p := range append(list("./..."), listIn("shared", "./...")...) {
		dir := strings.TrimPrefix(p, mod)
		// The layout says which is which: test support under
		// internal/testkit/, linked by no binary; every other package of
		// internal/ linked by one.
		testkit := strings.HasPrefix(dir, "internal/testkit/")
		switch linked := slices.Contains(linked, p); {
		case testkit && linked:
			t.Errorf("%s is test support (internal/testkit/) but a binary links it; move it out of testkit/", dir)
		case !testkit && strings.HasPrefix(dir, "internal/") && !linked:
			t.Errorf("%s is linked by no binary; test support goes under internal/testkit/", dir)
		}
		if testkit {
			continue
		}
		want = append(want, dir)
	}

	// Each package the table names says what it is for in its package doc,
	// which the row summarizes (a folder of tests alone has none to give).
	for _, line := range append(list("-f", "{{.ImportPath}}:{{len .GoFiles}}:{{if .Doc}}doc{{end}}", "./..."),
		listIn("shared", "-f", "{{.ImportPath}}:{{len .GoFiles}}:{{if .Doc}}doc{{end}}", "./...")...) {
		path, rest, _ := strings.Cut(line, ":")
		files, doc, _ := strings.Cut(rest, ":")
		dir := strings.TrimPrefix(path, mod)
		if files != "0" && doc == "" && slices.Contains(want, dir) {
			t.Errorf("%s/ has no package doc: say what the package is for and how it is used, as its row in docs/architecture.md does", dir)
		}
	}

	rows := layoutRows(t)
	for _, dir := range want {
		if !slices.ContainsFunc(rows, func(r layoutRow) bool { return r.names(dir) }) {
			t.Errorf("docs/architecture.md's layout table has no row for %s/; add one, with a line from its package doc", dir)
		}
	}
	for _, r := range rows {
		for _, p := range r.paths {
			if _, err := os.Stat(filepath.Join(root, p)); err != nil {
				t.Errorf("docs/architecture.md's layout table names %s/, which is not in the tree", p)
			}
		}
	}
}

// A layoutRow is a row of the layout table: the folders of its first cell
// and its whole text.
type layoutRow struct {
	paths []string
	text  string
}

// names says whether the row names the package in folder dir.
func (r layoutRow) names(dir string) bool {
	for _, p := range r.paths {
		if dir == p {
			return true
		}
		rest, ok := strings.CutPrefix(dir, p+"/")
		if !ok {
			continue
		}
		first, _, _ := strings.Cut(rest, "/")
		if strings.Contains(r.text, "`"+first+"`") || strings.Contains(r.text, "`"+first+"/") {
			return true
		}
	}
	return false
}

// layoutRows reads the table headed "| path | what it holds |".
func layoutRows(t *testing.T) []layoutRow {
	t.Helper()
	page, err := os.ReadFile(filepath.Join(root, "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(page), "\n| path | what it holds |\n")
	if !ok {
		t.Fatal("docs/architecture.md has no table headed | path | what it holds |")
	}
	code := regexp.MustCompile("`([^`]+)`")
	var rows []layoutRow
	for i, line := range strings.Split(table, "\n") {
		if !strings.HasPrefix(line, "|") {
			break
		}
		if i == 0 {
			continue // the |---| line
		}
		first, _, _ := strings.Cut(strings.TrimPrefix(line, "|"), "|")
		r := layoutRow{text: line}
		for _, m := range code.FindAllStringSubmatch(first, -1) {
			r.paths = append(r.paths, strings.TrimSuffix(m[1], "/"))
		}
		rows = append(rows, r)
	}
	if len(rows) < 10 {
		t.Fatalf("docs/architecture.md's layout table has only %d rows: is it still read right?", len(rows))
	}
	return rows
}

// TestArchitectureLayers: no package imports one of a layer above its own,
// as docs/architecture.md's layers table says.
func TestArchitectureLayers(t *testing.T) {
	t.Parallel()
	page, err := os.ReadFile(filepath.Join(root, "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(page), "\n| layer | packages |\n")
	if !ok {
		t.Fatal("docs/architecture.md has no table headed | layer | packages |")
	}
	// layerOf maps a folder to its layer's index, 0 the top.
	layerOf := map[string]int{}
	code := regexp.MustCompile("`([^`]+)/`")
	for i, line := range strings.Split(table, "\n")[1:] {
		if !strings.HasPrefix(line, "|") {
			break
		}
		for _, m := range code.FindAllStringSubmatch(line, -1) {
			layerOf[m[1]] = i
		}
	}
	layer := func(dir string) (int, bool) {
		for d := dir; d != "." && d != "/"; d = filepath.Dir(d) {
			if l, ok := layerOf[d]; ok {
				return l, true
			}
		}
		return 0, false
	}
	const mod = "github.com/plugkit-go/plugkit/"
	cmd := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Imports " "}}`, "./...")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		dir := strings.TrimPrefix(f[0], mod)
		if strings.HasPrefix(dir, "internal/testkit/") || strings.HasPrefix(dir, "examples/") {
			continue
		}
		from, ok := layer(dir)
		if !ok {
			if dir != "packaging/kubernetes" && dir != "sdk/python" { // tests alone
				t.Errorf("%s/ is on no layer of docs/architecture.md", dir)
			}
			continue
		}
		for _, imp := range f[1:] {
			to, ok := strings.CutPrefix(imp, mod)
			if !ok {
				continue
			}
			if l, ok := layer(to); ok && l < from {
				t.Errorf("%s/ imports %s/, of a layer above its own: move what it needs down, or the package up", dir, to)
			}
		}
	}
}
