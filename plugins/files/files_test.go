package main

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"go.uber.org/goleak"

	"github.com/plugkit-go/plugkit/shared/sdk"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fixture is a temp folder laid out as
//
//	outside/secret.txt        a file the tools must never reach
//	root/                     the plugin's root
//	  a.txt                   "hello"
//	  empty.txt               ""
//	  sub/b.txt               "bee"
//	  sub/deeper/             an empty folder
//	  link-in -> a.txt        a symbolic link that stays inside
//	  link-out -> ../outside  a symbolic link to a folder outside
//	  file-out -> ../outside/secret.txt
type fixture struct {
	t       *testing.T
	root    string
	outside string
	dir     *folder
	tools   map[string]sdk.Tool
}

func newFixture(t *testing.T, cfg Config) *fixture {
	t.Helper()
	base := t.TempDir()
	f := &fixture{t: t, root: filepath.Join(base, "root"), outside: filepath.Join(base, "outside")}
	f.mkdir("outside")
	f.write("outside/secret.txt", "top secret")
	f.mkdir("root/sub/deeper")
	f.write("root/a.txt", "hello")
	f.write("root/empty.txt", "")
	f.write("root/sub/b.txt", "bee")
	f.symlink("a.txt", "root/link-in")
	f.symlink("../outside", "root/link-out")
	f.symlink("../outside/secret.txt", "root/file-out")

	cfg.Root = f.root
	dir, err := openFolder(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dir.root.Close() })
	f.dir = dir
	f.tools = map[string]sdk.Tool{}
	for _, tool := range dir.tools() {
		f.tools[tool.Name] = tool
	}
	return f
}

func (f *fixture) mkdir(rel string) {
	f.t.Helper()
	if err := os.MkdirAll(filepath.Join(filepath.Dir(f.root), rel), 0o755); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) write(rel, content string) {
	f.t.Helper()
	if err := os.WriteFile(filepath.Join(filepath.Dir(f.root), rel), []byte(content), 0o644); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) symlink(target, rel string) {
	f.t.Helper()
	if err := os.Symlink(target, filepath.Join(filepath.Dir(f.root), rel)); err != nil {
		f.t.Fatal(err)
	}
}

// call runs a tool in-process as the host would, and returns its result as
// the JSON the host would receive.
func (f *fixture) call(name, args string) (string, error) {
	f.t.Helper()
	tool, ok := f.tools[name]
	if !ok {
		f.t.Fatalf("no tool %q", name)
	}
	out, err := tool.Execute(context.Background(), &sdk.Call{Execution: sdk.Execution{ID: "c1", Name: name, Arguments: json.RawMessage(args)}})
	if err != nil {
		return "", err
	}
	b, err := json.Marshal(out)
	if err != nil {
		f.t.Fatalf("%s: result cannot be encoded: %v", name, err)
	}
	return string(b), nil
}

func (f *fixture) mustCall(name, args string) map[string]any {
	f.t.Helper()
	out, err := f.call(name, args)
	if err != nil {
		f.t.Fatalf("%s %s: %v", name, args, err)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		f.t.Fatal(err)
	}
	return m
}

func (f *fixture) wantError(name, args string, wants ...string) {
	f.t.Helper()
	_, err := f.call(name, args)
	if err == nil {
		f.t.Fatalf("%s %s: no error, want one containing %q", name, args, wants)
	}
	for _, w := range wants {
		if !strings.Contains(err.Error(), w) {
			f.t.Errorf("%s %s: error %q does not contain %q", name, args, err, w)
		}
	}
}

func readOS(t *testing.T, p string) (string, bool) {
	t.Helper()
	b, err := os.ReadFile(p)
	if errors.Is(err, os.ErrNotExist) {
		return "", false
	}
	if err != nil {
		t.Fatal(err)
	}
	return string(b), true
}

func TestReadFile(t *testing.T) {
	f := newFixture(t, Config{MaxBytes: 5})
	t.Run("a file", func(t *testing.T) {
		got := f.mustCall("read_file", `{"path":"a.txt"}`)
		want := map[string]any{"path": "a.txt", "content": "hello", "size": float64(5)}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("got %v, want %v", got, want)
		}
	})
	t.Run("a file in a folder", func(t *testing.T) {
		if got := f.mustCall("read_file", `{"path":"sub/b.txt"}`)["content"]; got != "bee" {
			t.Errorf("content = %v", got)
		}
	})
	t.Run("an empty file", func(t *testing.T) {
		if got := f.mustCall("read_file", `{"path":"empty.txt"}`); got["content"] != "" || got["size"] != float64(0) {
			t.Errorf("got %v", got)
		}
	})
	t.Run("a symbolic link that stays inside", func(t *testing.T) {
		if got := f.mustCall("read_file", `{"path":"link-in"}`)["content"]; got != "hello" {
			t.Errorf("content = %v", got)
		}
	})
	t.Run("dot segments that stay inside", func(t *testing.T) {
		if got := f.mustCall("read_file", `{"path":"./sub/../a.txt"}`)["content"]; got != "hello" {
			t.Errorf("content = %v", got)
		}
	})
	t.Run("a missing file", func(t *testing.T) {
		f.wantError("read_file", `{"path":"nope.txt"}`, `read_file "nope.txt"`, "no such file")
	})
	t.Run("a folder", func(t *testing.T) {
		f.wantError("read_file", `{"path":"sub"}`, `read_file "sub"`, "folder", "list_dir")
	})
	t.Run("over max_bytes", func(t *testing.T) {
		f.write("root/big.txt", "123456")
		f.wantError("read_file", `{"path":"big.txt"}`, `read_file "big.txt"`, "6 bytes", "5-byte limit", "max_bytes")
	})
	t.Run("binary content", func(t *testing.T) {
		f.write("root/bin", "\xff\xfe\x00")
		f.wantError("read_file", `{"path":"bin"}`, `read_file "bin"`, "not UTF-8")
	})
	t.Run("a cancelled call", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := f.tools["read_file"].Execute(ctx, &sdk.Call{Execution: sdk.Execution{Name: "read_file", Arguments: json.RawMessage(`{"path":"a.txt"}`)}})
		if !errors.Is(err, context.Canceled) {
			t.Errorf("err = %v, want context.Canceled", err)
		}
	})
}

func TestMaxBytesDefault(t *testing.T) {
	f := newFixture(t, Config{})
	if f.dir.maxBytes != 1<<20 {
		t.Fatalf("maxBytes = %d, want 1 MiB", f.dir.maxBytes)
	}
	f.write("root/mib", strings.Repeat("x", 1<<20))
	if got := f.mustCall("read_file", `{"path":"mib"}`)["size"]; got != float64(1<<20) {
		t.Errorf("a file of exactly max_bytes: size = %v", got)
	}
	f.write("root/over", strings.Repeat("x", 1<<20+1))
	f.wantError("read_file", `{"path":"over"}`, "1048577 bytes", "1048576-byte limit")
}

func TestListDir(t *testing.T) {
	f := newFixture(t, Config{})
	size := func(n int64) *int64 { return &n }
	for _, tc := range []struct {
		name, args string
		want       listResult
	}{
		{name: "the root by default", args: `{}`, want: listResult{Path: ".", Entries: []entry{
			{Name: "a.txt", Type: "file", Size: size(5)},
			{Name: "empty.txt", Type: "file", Size: size(0)},
			{Name: "file-out", Type: "symlink"},
			{Name: "link-in", Type: "symlink"},
			{Name: "link-out", Type: "symlink"},
			{Name: "sub", Type: "dir"},
		}}},
		{name: "a folder", args: `{"path":"sub"}`, want: listResult{Path: "sub", Entries: []entry{
			{Name: "b.txt", Type: "file", Size: size(3)},
			{Name: "deeper", Type: "dir"},
		}}},
		{name: "an empty folder", args: `{"path":"sub/deeper"}`, want: listResult{Path: "sub/deeper", Entries: []entry{}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := f.call("list_dir", tc.args)
			if err != nil {
				t.Fatal(err)
			}
			want, _ := json.Marshal(tc.want)
			if out != string(want) {
				t.Errorf("got  %s\nwant %s", out, want)
			}
		})
	}
	t.Run("an empty folder is an empty array, not null", func(t *testing.T) {
		out, _ := f.call("list_dir", `{"path":"sub/deeper"}`)
		if !strings.Contains(out, `"entries":[]`) {
			t.Errorf("got %s", out)
		}
	})
	t.Run("a file", func(t *testing.T) {
		f.wantError("list_dir", `{"path":"a.txt"}`, `list_dir "a.txt"`, "not a folder", "read_file")
	})
	t.Run("a missing folder", func(t *testing.T) {
		f.wantError("list_dir", `{"path":"nope"}`, `list_dir "nope"`, "no such file or folder")
	})
}

func TestWriteFile(t *testing.T) {
	f := newFixture(t, Config{})
	t.Run("a new file", func(t *testing.T) {
		got := f.mustCall("write_file", `{"path":"new.txt","content":"fresh"}`)
		want := map[string]any{"path": "new.txt", "size": float64(5), "created": true}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("got %v, want %v", got, want)
		}
		if c, _ := readOS(t, filepath.Join(f.root, "new.txt")); c != "fresh" {
			t.Errorf("on disk: %q", c)
		}
	})
	t.Run("an existing file is replaced, not appended to", func(t *testing.T) {
		got := f.mustCall("write_file", `{"path":"a.txt","content":"hi"}`)
		if got["created"] != false || got["size"] != float64(2) {
			t.Errorf("got %v", got)
		}
		if c, _ := readOS(t, filepath.Join(f.root, "a.txt")); c != "hi" {
			t.Errorf("on disk: %q", c)
		}
	})
	t.Run("missing parent folders are created", func(t *testing.T) {
		f.mustCall("write_file", `{"path":"x/y/z.txt","content":"deep"}`)
		if c, _ := readOS(t, filepath.Join(f.root, "x", "y", "z.txt")); c != "deep" {
			t.Errorf("on disk: %q", c)
		}
	})
	t.Run("an empty file", func(t *testing.T) {
		f.mustCall("write_file", `{"path":"zero.txt","content":""}`)
		if c, ok := readOS(t, filepath.Join(f.root, "zero.txt")); !ok || c != "" {
			t.Errorf("on disk: %q %v", c, ok)
		}
	})
	t.Run("through a symbolic link that stays inside", func(t *testing.T) {
		f.mustCall("write_file", `{"path":"link-in","content":"via link"}`)
		if c, _ := readOS(t, filepath.Join(f.root, "a.txt")); c != "via link" {
			t.Errorf("target on disk: %q", c)
		}
	})
	t.Run("a folder", func(t *testing.T) {
		f.wantError("write_file", `{"path":"sub","content":"x"}`, `write_file "sub"`, "folder")
	})
	t.Run("a parent that is a file", func(t *testing.T) {
		f.wantError("write_file", `{"path":"empty.txt/x","content":"x"}`, `write_file "empty.txt/x"`)
	})
}

func TestDeleteFile(t *testing.T) {
	f := newFixture(t, Config{})
	t.Run("a file", func(t *testing.T) {
		got := f.mustCall("delete_file", `{"path":"sub/b.txt"}`)
		if !reflect.DeepEqual(got, map[string]any{"path": "sub/b.txt", "deleted": true}) {
			t.Errorf("got %v", got)
		}
		if _, ok := readOS(t, filepath.Join(f.root, "sub", "b.txt")); ok {
			t.Error("the file is still there")
		}
	})
	t.Run("again: no such file", func(t *testing.T) {
		f.wantError("delete_file", `{"path":"sub/b.txt"}`, `delete_file "sub/b.txt"`, "no such file")
	})
	t.Run("a folder is refused", func(t *testing.T) {
		f.wantError("delete_file", `{"path":"sub/deeper"}`, `delete_file "sub/deeper"`, "folder")
		if _, err := os.Stat(filepath.Join(f.root, "sub", "deeper")); err != nil {
			t.Error("the folder is gone")
		}
	})
	t.Run("the root is refused", func(t *testing.T) {
		f.wantError("delete_file", `{"path":"."}`, "folder")
	})
	t.Run("a symbolic link out deletes the link, not its target", func(t *testing.T) {
		f.mustCall("delete_file", `{"path":"file-out"}`)
		if _, err := os.Lstat(filepath.Join(f.root, "file-out")); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the link is still there: %v", err)
		}
		if c, ok := readOS(t, filepath.Join(f.outside, "secret.txt")); !ok || c != "top secret" {
			t.Error("the link's target outside the root was touched")
		}
	})
}

// TestEscapes runs every tool on every way out of the root; each must be
// refused with an error naming the tool and the path, and nothing outside
// may change.
func TestEscapes(t *testing.T) {
	f := newFixture(t, Config{})
	secret := filepath.Join(f.outside, "secret.txt")
	escapes := []struct{ name, path string }{
		{"dot-dot", "../outside/secret.txt"},
		{"dot-dot after a folder", "sub/../../outside/secret.txt"},
		{"absolute path outside", secret},
		{"absolute path inside", filepath.Join(f.root, "a.txt")},
		{"a symbolic link to a file outside", "file-out"},
		{"through a symbolically linked folder", "link-out/secret.txt"},
		{"a new file in a symbolically linked folder", "link-out/new.txt"},
	}
	for _, e := range escapes {
		p, _ := json.Marshal(e.path)
		for _, tc := range []struct{ tool, args string }{
			{"read_file", `{"path":` + string(p) + `}`},
			{"list_dir", `{"path":` + string(p) + `}`},
			{"write_file", `{"path":` + string(p) + `,"content":"pwned"}`},
		} {
			t.Run(tc.tool+"/"+e.name, func(t *testing.T) {
				f.wantError(tc.tool, tc.args, tc.tool+" "+string(p), "outside the root folder")
			})
		}
		// Deleting a link deletes the link itself, which is inside: only
		// paths that go through something outside are escapes.
		if e.path != "file-out" {
			t.Run("delete_file/"+e.name, func(t *testing.T) {
				f.wantError("delete_file", `{"path":`+string(p)+`}`, "delete_file "+string(p), "outside the root folder")
			})
		}
	}
	t.Run("a symbolically linked folder cannot be listed", func(t *testing.T) {
		f.wantError("list_dir", `{"path":"link-out"}`, "outside the root folder")
	})
	t.Run("a parent folder cannot be created through a link", func(t *testing.T) {
		f.wantError("write_file", `{"path":"link-out/newdir/x.txt","content":"x"}`, "outside the root folder")
	})
	t.Run("nothing outside changed", func(t *testing.T) {
		if c, ok := readOS(t, secret); !ok || c != "top secret" {
			t.Errorf("secret.txt: %q %v", c, ok)
		}
		entries, err := os.ReadDir(f.outside)
		if err != nil || len(entries) != 1 {
			t.Errorf("outside holds %v (%v), want only secret.txt", entries, err)
		}
	})
}

// TestParameters checks the declared schemas with a real JSON Schema
// validator, as the host does before any stage runs.
func TestParameters(t *testing.T) {
	f := newFixture(t, Config{})
	for _, tc := range []struct {
		tool, args string
		ok         bool
	}{
		{"read_file", `{"path":"a.txt"}`, true},
		{"read_file", `{}`, false},
		{"read_file", `{"path":""}`, false},
		{"read_file", `{"path":1}`, false},
		{"read_file", `{"path":"a.txt","extra":1}`, false},
		{"list_dir", `{}`, true},
		{"list_dir", `{"path":"sub"}`, true},
		{"list_dir", `{"path":""}`, false},
		{"list_dir", `{"recursive":true}`, false},
		{"write_file", `{"path":"a","content":""}`, true},
		{"write_file", `{"path":"a"}`, false},
		{"write_file", `{"content":"x"}`, false},
		{"write_file", `{"path":"a","content":"x","mode":"0600"}`, false},
		{"delete_file", `{"path":"a"}`, true},
		{"delete_file", `{}`, false},
		{"delete_file", `{"path":"a","recursive":true}`, false},
	} {
		t.Run(tc.tool+" "+tc.args, func(t *testing.T) {
			c := jsonschema.NewCompiler()
			c.AssertFormat()
			doc, err := jsonschema.UnmarshalJSON(strings.NewReader(f.tools[tc.tool].Parameters))
			if err != nil {
				t.Fatal(err)
			}
			if err := c.AddResource("params.json", doc); err != nil {
				t.Fatal(err)
			}
			sch, err := c.Compile("params.json")
			if err != nil {
				t.Fatal(err)
			}
			inst, _ := jsonschema.UnmarshalJSON(strings.NewReader(tc.args))
			if err := sch.Validate(inst); (err == nil) != tc.ok {
				t.Errorf("valid = %v, want %v (%v)", err == nil, tc.ok, err)
			}
		})
	}
}

func TestToolHints(t *testing.T) {
	f := newFixture(t, Config{})
	for _, tc := range []struct {
		tool                  string
		readOnly, destructive bool
	}{
		{"read_file", true, false},
		{"list_dir", true, false},
		{"write_file", false, true},
		{"delete_file", false, true},
	} {
		t.Run(tc.tool, func(t *testing.T) {
			tool := f.tools[tc.tool]
			if tool.ReadOnly != tc.readOnly || tool.Destructive != tc.destructive {
				t.Errorf("read-only %v destructive %v, want %v %v", tool.ReadOnly, tool.Destructive, tc.readOnly, tc.destructive)
			}
			if tool.Description == "" {
				t.Error("no description")
			}
		})
	}
}

func TestConfig(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		cfg   Config
		wants []string
	}{
		{name: "no root", cfg: Config{}, wants: []string{"config: root is empty"}},
		{name: "every problem at once", cfg: Config{MaxBytes: -1}, wants: []string{"root is empty", "max_bytes is -1"}},
		{name: "a missing root", cfg: Config{Root: filepath.Join(dir, "nope")}, wants: []string{"config: root", "no such file"}},
		{name: "a root that is a file", cfg: Config{Root: file}, wants: []string{"config: root", "is not a folder"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := openFolder(tc.cfg)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.wants {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error %q is not one line", err)
			}
		})
	}
	t.Run("a custom max_bytes", func(t *testing.T) {
		d, err := openFolder(Config{Root: dir, MaxBytes: 10})
		if err != nil {
			t.Fatal(err)
		}
		defer d.root.Close()
		if d.maxBytes != 10 {
			t.Errorf("maxBytes = %d", d.maxBytes)
		}
	})
}

// TestReapply checks that a second Apply's root replaces the first, which
// is closed.
func TestReapply(t *testing.T) {
	var st state
	first, err := openFolder(Config{Root: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	second, err := openFolder(Config{Root: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.replace(first); err != nil {
		t.Fatal(err)
	}
	if err := st.replace(second); err != nil {
		t.Fatal(err)
	}
	if _, err := first.root.Stat("."); err == nil {
		t.Error("the first root is still open")
	}
	if err := st.replace(nil); err != nil { // Stop
		t.Fatal(err)
	}
	if _, err := second.root.Stat("."); err == nil {
		t.Error("the second root is still open after Stop")
	}
}

func TestDefinition(t *testing.T) {
	p := newPlugin()
	if p.Name != "files" || !reflect.DeepEqual(p.Inject, []string{"tools"}) || p.Apply == nil || p.Stop == nil {
		t.Errorf("definition: %+v", p)
	}
}

// A root deleted and made again under the running plugin (the sample's
// `rm -r run/sandbox && make build`) is named as such, with what to do,
// rather than every path being "no such file" in the deleted folder.
func TestRootReplaced(t *testing.T) {
	f := newFixture(t, Config{})
	f.mustCall("list_dir", `{}`)
	if err := os.RemoveAll(f.root); err != nil {
		t.Fatal(err)
	}
	f.wantError("read_file", `{"path":"a.txt"}`, "was removed after the plugin opened it", "host reload")
	f.mkdir("root")
	f.write("root/a.txt", "again")
	f.wantError("write_file", `{"path":"a.txt","content":"x"}`, "was replaced by another folder", "host reload")
	if got, _ := readOS(t, filepath.Join(f.root, "a.txt")); got != "again" {
		t.Fatalf("the new folder was written: %q", got)
	}
}
