package main

import (
	"bytes"
	"context"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// TestCLIDocsListEveryCommand: every command of the CLI is listed by the
// help of its parent and has its row in README.md's table of commands, and
// the table names no command the CLI does not have.
func TestCLIDocsListEveryCommand(t *testing.T) {
	t.Parallel()
	// A row's first cell is `host NAME [ARGS]`: NAME is lower case, its
	// arguments are upper case or in brackets.
	name := regexp.MustCompile("^`host ([a-z ]+?)(?: [A-Z\\[][^`]*)?`$")
	var rows []string
	for _, cell := range readmeTable(t, "| command | what it does |") {
		m := name.FindStringSubmatch(cell)
		if m == nil {
			t.Errorf("README.md's table of commands: row %q does not start with `host NAME [ARGS]`", cell)
			continue
		}
		rows = append(rows, m[1])
	}

	var leaves []string
	var walk func(c *cobra.Command, path []string)
	walk = func(c *cobra.Command, path []string) {
		help := helpOf(t, path)
		for _, sub := range c.Commands() {
			at := append(slices.Clone(path), sub.Name())
			if !regexp.MustCompile(`(?m)^  ` + regexp.QuoteMeta(sub.Name()) + `\s`).MatchString(help) {
				t.Errorf("%s --help does not list %s", strings.Join(append([]string{"host"}, path...), " "), strings.Join(at, " "))
			}
			if sub.HasSubCommands() {
				walk(sub, at)
				continue
			}
			leaves = append(leaves, strings.Join(at, " "))
		}
	}
	walk(newRoot(&env{stdout: io.Discard, stderr: io.Discard}), nil)
	for _, l := range leaves {
		if !slices.Contains(rows, l) {
			t.Errorf("README.md's table of commands has no row for host %s", l)
		}
	}
	for _, r := range rows {
		if !slices.Contains(leaves, r) {
			t.Errorf("README.md's table of commands has a row for host %s, which is no command", r)
		}
	}
}

// helpOf is what `host PATH... --help` prints.
func helpOf(t *testing.T, path []string) string {
	t.Helper()
	var out bytes.Buffer
	if code := run(context.Background(), append(slices.Clone(path), "--help"), nil, &out, io.Discard); code != exitOK {
		t.Fatalf("host %s --help: exit %d", strings.Join(path, " "), code)
	}
	return out.String()
}

// TestCLIDocsExitCodes: the exit codes that `host --help` and README.md
// explain are the exit constants of this package, each once.
func TestCLIDocsExitCodes(t *testing.T) {
	t.Parallel()
	consts := exitConstants(t)
	if len(consts) < 3 {
		t.Fatalf("found only exit constants %v: are they still named exit...?", consts)
	}
	var tabled []int
	for _, c := range exitCodes {
		tabled = append(tabled, c.code)
	}
	help := helpOf(t, nil)
	for name, code := range consts {
		if !slices.Contains(tabled, code) {
			t.Errorf("%s = %d has no row in exitCodes, which the help prints", name, code)
		}
		if !regexp.MustCompile(`(?m)^  ` + strconv.Itoa(code) + `  \S`).MatchString(help) {
			t.Errorf("host --help does not explain exit code %d (%s)", code, name)
		}
	}
	var documented []int
	for _, cell := range readmeTable(t, "| exit code | means |") {
		n, err := strconv.Atoi(cell)
		if err != nil {
			t.Errorf("README.md's table of exit codes: row %q is not a number", cell)
		}
		documented = append(documented, n)
	}
	var want []int
	for _, code := range consts {
		if !slices.Contains(want, code) {
			want = append(want, code)
		}
	}
	slices.Sort(want)
	for _, codes := range [][]int{tabled, documented} {
		slices.Sort(codes)
	}
	if !slices.Equal(tabled, want) {
		t.Errorf("exitCodes has rows for %v; the exit constants are %v", tabled, want)
	}
	if !slices.Equal(documented, want) {
		t.Errorf("README.md's table of exit codes has %v; the exit constants are %v", documented, want)
	}
}

// readmeTable returns the first cell of each row of README.md's table
// whose header line is header.
func readmeTable(t *testing.T, header string) []string {
	t.Helper()
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(readme), "\n"+header+"\n")
	if !ok {
		t.Fatalf("README.md has no table headed %s", header)
	}
	var cells []string
	for i, line := range strings.Split(table, "\n") {
		if !strings.HasPrefix(line, "|") {
			break
		}
		if i == 0 {
			continue // the |---| line
		}
		cell, _, _ := strings.Cut(strings.TrimPrefix(line, "|"), "|")
		cells = append(cells, strings.TrimSpace(cell))
	}
	if len(cells) == 0 {
		t.Fatalf("README.md's table headed %s has no rows", header)
	}
	return cells
}

// exitConstants are the constants named exit... of this package's
// source, with their values.
func exitConstants(t *testing.T) map[string]int {
	t.Helper()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range file.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, name := range vs.Names {
					if !strings.HasPrefix(name.Name, "exit") || i >= len(vs.Values) {
						continue
					}
					lit, ok := vs.Values[i].(*ast.BasicLit)
					if !ok || lit.Kind != token.INT {
						t.Errorf("%s: constant %s is not an integer literal; the test reads exit codes as such", f, name.Name)
						continue
					}
					n, _ := strconv.Atoi(lit.Value)
					out[name.Name] = n
				}
			}
		}
	}
	return out
}
