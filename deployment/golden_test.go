package deployment

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the current output")

// testBinaries are written beside each golden input, so that its paths
// ("bin/ok") resolve without naming a folder of this machine.
var testBinaries = []struct {
	path string
	mode fs.FileMode
	body string
}{
	// SHA-256 306c6ca7407560340797866e077e053627ad409277d1b9da58106fce4cf717cb
	{"bin/ok", 0o755, "#!/bin/sh\nexit 0\n"},
	{"bin/other", 0o755, "#!/bin/sh\nexit 1\n"},
	{"bin/noexec", 0o644, "#!/bin/sh\nexit 0\n"},
}

func writeBinaries(t testing.TB, dir string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(dir, "bin", "folder"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, b := range testBinaries {
		p := filepath.Join(dir, b.path)
		if err := os.WriteFile(p, []byte(b.body), b.mode); err != nil {
			t.Fatal(err)
		}
		// WriteFile's mode is subject to the umask.
		if err := os.Chmod(p, b.mode); err != nil {
			t.Fatal(err)
		}
	}
}

// fakeDeclaration is one plugin's answer in a testdata/NAME.describe.json
// file, which maps plugin names to answers; a plugin it leaves out declares
// nothing.
type fakeDeclaration struct {
	ConfigSchema json.RawMessage `json:"config_schema"`
	Inject       []string        `json:"inject"`
	Provides     []string        `json:"provides"`
	Receipts     bool            `json:"receipts"`
	Error        string          `json:"error"`
}

// fakeDescribe answers describe from a map, as a plugin process would.
type fakeDescribe map[string]fakeDeclaration

func (f fakeDescribe) describe(ctx context.Context, p Plugin) (Declaration, error) {
	if err := ctx.Err(); err != nil {
		return Declaration{}, err
	}
	d := f[p.Name]
	if d.Error != "" {
		return Declaration{}, errors.New(d.Error)
	}
	return Declaration{ConfigSchema: d.ConfigSchema, Inject: d.Inject, Provides: d.Provides, Receipts: d.Receipts}, nil
}

// TestGolden runs every testdata/NAME.hcl through Parse and, when it parses
// cleanly, Check (with testdata/NAME.describe.json as the plugins' answers),
// and compares the output with testdata/NAME.golden. Run with -update to
// rewrite the golden files.
func TestGolden(t *testing.T) {
	inputs, err := filepath.Glob(filepath.Join("testdata", "*.hcl"))
	if err != nil || len(inputs) == 0 {
		t.Fatalf("no testdata/*.hcl: %v", err)
	}
	testdata, err := filepath.Abs("testdata")
	if err != nil {
		t.Fatal(err)
	}
	for _, input := range inputs {
		name := strings.TrimSuffix(filepath.Base(input), ".hcl")
		t.Run(name, func(t *testing.T) {
			src, err := os.ReadFile(input)
			if err != nil {
				t.Fatal(err)
			}
			answers := fakeDescribe{}
			if raw, err := os.ReadFile(filepath.Join(testdata, name+".describe.json")); err == nil {
				if err := json.Unmarshal(raw, &answers); err != nil {
					t.Fatalf("%s.describe.json: %v", name, err)
				}
			}
			// Parse in a folder of its own holding the test binaries, named
			// relative to it so that the output is the same on every machine.
			dir := t.TempDir()
			writeBinaries(t, dir)
			if err := os.WriteFile(filepath.Join(dir, name+".hcl"), src, 0o644); err != nil {
				t.Fatal(err)
			}
			t.Chdir(dir)
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			got := goldenOutput(ctx, name+".hcl", answers)

			golden := filepath.Join(testdata, name+".golden")
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -update to create it)", err)
			}
			if got != string(want) {
				t.Errorf("output differs from testdata/%s.golden (go test -update rewrites it)\ngot:\n%s\nwant:\n%s", name, got, want)
			}
		})
	}
}

// goldenOutput is Format's output, or for a file without problems the
// plugins in start order with what they are given.
func goldenOutput(ctx context.Context, file string, answers fakeDescribe) string {
	d, diags := Parse(file)
	if !diags.HasErrors() {
		diags = append(diags, Check(ctx, d, answers.describe)...)
	}
	if len(diags) > 0 {
		return Format(diags)
	}
	var b strings.Builder
	b.WriteString("ok; start order:\n")
	for _, p := range d.Plugins {
		fmt.Fprintf(&b, "%s inject=%q config=%s\n", p.Name, p.Inject, p.Config)
		if pol := p.Sandbox.Policy(); pol != nil {
			// Paths as the file wrote them: relative to its folder.
			dir, _ := filepath.Abs(".")
			rel := func(list []string) []string {
				out := make([]string, len(list))
				for i, a := range list {
					out[i], _ = filepath.Rel(dir, a)
				}
				return out
			}
			fmt.Fprintf(&b, "  sandbox read=%q write=%q exec=%q network=%s limits=%+v env=%v user=%q required=%v\n",
				rel(pol.Read), rel(pol.Write), rel(pol.Exec), pol.Network, pol.Limits, pol.Env, pol.User, pol.Required)
		}
	}
	return b.String()
}
