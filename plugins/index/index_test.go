package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/plugkit-go/plugkit/internal/testkit/testkit"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	// bleve starts its analysis workers when the package is initialised and
	// never stops them: they are not ours to leak.
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("github.com/blevesearch/bleve_index_api.AnalysisWorker"))
}

// corpusDir is the corpus shipped in the repository; knownDoc holds the
// phrase "monotonic guard" and no other file has "monotonic".
const (
	corpusDir = "../../corpus"
	knownDoc  = "pipeline/monotonic-guards.md"
)

// writeTree creates files (relative path → content) under a new temp folder.
func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		path := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// buildIndex checks cfg and builds its index, closed when the test ends.
func buildIndex(t *testing.T, cfg Config, log hclog.Logger) *index {
	t.Helper()
	s, err := cfg.settings()
	if err != nil {
		t.Fatalf("settings: %v", err)
	}
	if log == nil {
		log = hclog.NewNullLogger()
	}
	x, err := build(testkit.Context(t), s, log)
	if err != nil {
		t.Fatalf("build: %v", err)
	}
	t.Cleanup(func() {
		if err := x.close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return x
}

// call runs a service method the way the SDK does: JSON in, and the result
// encoded to JSON and decoded into out, so the test sees the wire shape.
func call(t *testing.T, x *index, method, args string, out any) error {
	t.Helper()
	m, ok := x.service().Methods[method]
	if !ok {
		t.Fatalf("no method %q", method)
	}
	v, err := m(testkit.Context(t), json.RawMessage(args))
	if err != nil {
		return err
	}
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("encode %s result: %v", method, err)
	}
	if err := json.Unmarshal(raw, out); err != nil {
		t.Fatalf("decode %s result %s: %v", method, raw, err)
	}
	return nil
}

func search(t *testing.T, x *index, args string) SearchResult {
	t.Helper()
	var res SearchResult
	if err := call(t, x, "search", args, &res); err != nil {
		t.Fatalf("search %s: %v", args, err)
	}
	return res
}

func paths(hits []Hit) []string {
	var out []string
	for _, h := range hits {
		out = append(out, h.Path)
	}
	return out
}

func TestSettings(t *testing.T) {
	dir := writeTree(t, map[string]string{"a.md": "a", "file.txt": "x", "busy/keep.txt": "mine"})
	empty := t.TempDir()

	tests := []struct {
		name    string
		cfg     Config
		wantErr []string // every fragment must be in the error
		wantExt []string
	}{
		{name: "root missing", cfg: Config{}, wantErr: []string{"config: root is required"}},
		{name: "root blank", cfg: Config{Root: "  "}, wantErr: []string{"config: root is required"}},
		{name: "root does not exist", cfg: Config{Root: filepath.Join(dir, "nope")},
			wantErr: []string{`config: root "` + filepath.Join(dir, "nope") + `": no such folder`}},
		{name: "relative root says where it looked", cfg: Config{Root: "no-such-folder"},
			wantErr: []string{`config: root "no-such-folder": no such folder (looked for `}},
		{name: "root is a file", cfg: Config{Root: filepath.Join(dir, "file.txt")},
			wantErr: []string{"is a file, not a folder"}},
		{name: "default extensions", cfg: Config{Root: dir}, wantExt: []string{".md", ".txt"}},
		{name: "extensions normalised", cfg: Config{Root: dir, Extensions: []string{"MD", ".Txt", ".md", "rst"}},
			wantExt: []string{".md", ".txt", ".rst"}},
		{name: "empty extension", cfg: Config{Root: dir, Extensions: []string{".md", " "}},
			wantErr: []string{`config: extensions[1] " " is empty`}},
		{name: "extension with a slash", cfg: Config{Root: dir, Extensions: []string{"a/b"}},
			wantErr: []string{`config: extensions[0] "a/b" is not a file name extension`}},
		{name: "index_path holds other files", cfg: Config{Root: dir, IndexPath: filepath.Join(dir, "busy")},
			wantErr: []string{`config: index_path "` + filepath.Join(dir, "busy") + `": is a folder that is not empty and holds no index`}},
		{name: "index_path is root", cfg: Config{Root: empty, IndexPath: empty},
			wantErr: []string{`config: index_path "` + empty + `": is root or a folder around it`}},
		{name: "every problem at once", cfg: Config{Extensions: []string{""}},
			wantErr: []string{"config: root is required", "config: extensions[0]"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := tt.cfg.settings()
			if len(tt.wantErr) > 0 {
				if err == nil {
					t.Fatalf("settings(%+v) = %+v, want an error", tt.cfg, s)
				}
				for _, frag := range tt.wantErr {
					if !strings.Contains(err.Error(), frag) {
						t.Errorf("error %q does not contain %q", err, frag)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("settings: %v", err)
			}
			if !slices.Equal(s.extensions, tt.wantExt) {
				t.Errorf("extensions = %q, want %q", s.extensions, tt.wantExt)
			}
			if s.root != tt.cfg.Root || !filepath.IsAbs(s.dir) {
				t.Errorf("root = %q, dir = %q", s.root, s.dir)
			}
		})
	}
}

func TestBuildFolder(t *testing.T) {
	dir := writeTree(t, map[string]string{
		"alpha.md":          "# Alpha\nThe quick brown fox jumps over the lazy dog.",
		"beta.TXT":          "Foxes are quick; a < b & c holds here.",
		"deep/gamma.md":     "Nothing about animals, only a fox in passing.",
		"deep/code.go":      "package fox // not an indexed extension",
		".git/HEAD.md":      "fox in a hidden folder",
		".hidden.md":        "fox in a hidden file",
		"deep/.cache/x.txt": "fox hidden deeper",
	})
	var logs bytes.Buffer
	log := hclog.New(&hclog.LoggerOptions{Output: &logs, Level: hclog.Info})
	x := buildIndex(t, Config{Root: dir}, log)

	t.Run("stats", func(t *testing.T) {
		var st Stats
		if err := call(t, x, "stats", "", &st); err != nil {
			t.Fatal(err)
		}
		if st != (Stats{Documents: 3, Root: dir}) {
			t.Errorf("stats = %+v, want 3 documents under %s", st, dir)
		}
	})
	t.Run("one line for a small folder", func(t *testing.T) {
		if !strings.Contains(logs.String(), "3 documents in memory") || strings.Contains(logs.String(), "indexed ") {
			t.Errorf("want the ready line alone, no progress lines:\n%s", logs.String())
		}
	})
	t.Run("relative paths, stemming", func(t *testing.T) {
		res := search(t, x, `{"q":"fox"}`)
		got := paths(res.Hits)
		slices.Sort(got)
		want := []string{"alpha.md", "beta.TXT", "deep/gamma.md"}
		if !slices.Equal(got, want) || res.Total != 3 {
			t.Errorf("hits = %q (total %d), want %q", got, res.Total, want)
		}
	})
	t.Run("snippet is plain text with the match marked", func(t *testing.T) {
		res := search(t, x, `{"q":"holds"}`)
		if len(res.Hits) != 1 {
			t.Fatalf("hits = %+v, want beta.TXT only", res.Hits)
		}
		if want := "a < b & c **holds** here."; !strings.Contains(res.Hits[0].Snippet, want) {
			t.Errorf("snippet = %q, want it to contain %q", res.Hits[0].Snippet, want)
		}
	})
	t.Run("no match is an empty list", func(t *testing.T) {
		var raw map[string]json.RawMessage
		if err := call(t, x, "search", `{"q":"zebra"}`, &raw); err != nil {
			t.Fatal(err)
		}
		if string(raw["hits"]) != "[]" || string(raw["total"]) != "0" {
			t.Errorf("result = %s / %s, want [] and 0", raw["hits"], raw["total"])
		}
	})
}

func TestBuildEmptyFolder(t *testing.T) {
	var logs bytes.Buffer
	x := buildIndex(t, Config{Root: t.TempDir()}, hclog.New(&hclog.LoggerOptions{Output: &logs}))
	if res := search(t, x, `{"q":"anything"}`); len(res.Hits) != 0 {
		t.Errorf("hits = %+v, want none", res.Hits)
	}
	if !strings.Contains(logs.String(), "no files to index") {
		t.Errorf("log lacks the warning:\n%s", logs.String())
	}
}

func TestCorpus(t *testing.T) {
	x := buildIndex(t, Config{Root: corpusDir}, nil)

	t.Run("stats", func(t *testing.T) {
		var st Stats
		if err := call(t, x, "stats", "{}", &st); err != nil {
			t.Fatal(err)
		}
		if st.Root != corpusDir || st.Documents < 8 || st.Documents > 15 {
			t.Errorf("stats = %+v, want 8 to 15 documents under %s", st, corpusDir)
		}
	})
	t.Run("known document first", func(t *testing.T) {
		res := search(t, x, `{"q":"monotonic guard"}`)
		if len(res.Hits) == 0 || res.Hits[0].Path != knownDoc {
			t.Fatalf("hits = %q, want %s first", paths(res.Hits), knownDoc)
		}
		if s := res.Hits[0].Snippet; !strings.Contains(strings.ToLower(s), "**monotonic**") {
			t.Errorf("snippet = %q, want the term marked in it", s)
		}
		if res.Hits[0].Score <= 0 {
			t.Errorf("score = %v, want > 0", res.Hits[0].Score)
		}
	})
	t.Run("phrase", func(t *testing.T) {
		res := search(t, x, `{"q":"\"monotonic guard\""}`)
		if !slices.Equal(paths(res.Hits), []string{knownDoc}) {
			t.Errorf("hits = %q, want only %s", paths(res.Hits), knownDoc)
		}
	})
	t.Run("limit honoured, best first", func(t *testing.T) {
		all := search(t, x, `{"q":"plugin","limit":100}`)
		if all.Total <= 3 || int(all.Total) != len(all.Hits) {
			t.Fatalf("total = %d with %d hits; the test needs more than 3 matches", all.Total, len(all.Hits))
		}
		res := search(t, x, `{"q":"plugin","limit":3}`)
		if len(res.Hits) != 3 || res.Total != all.Total {
			t.Errorf("got %d hits of %d, want 3 of %d", len(res.Hits), res.Total, all.Total)
		}
		if !slices.Equal(paths(res.Hits), paths(all.Hits[:3])) {
			t.Errorf("first page %q, want %q", paths(res.Hits), paths(all.Hits[:3]))
		}
		for i := 1; i < len(all.Hits); i++ {
			if all.Hits[i].Score > all.Hits[i-1].Score {
				t.Errorf("hit %d scores %v after %v", i, all.Hits[i].Score, all.Hits[i-1].Score)
			}
		}
	})
	t.Run("default limit", func(t *testing.T) {
		res := search(t, x, `{"q":"host plugin call tool"}`)
		if res.Total <= defaultLimit || len(res.Hits) != defaultLimit {
			t.Errorf("got %d hits of %d, want %d", len(res.Hits), res.Total, defaultLimit)
		}
	})
}

func TestSearchArguments(t *testing.T) {
	x := buildIndex(t, Config{Root: corpusDir}, nil)
	tests := []struct {
		name    string
		args    string
		wantErr string
	}{
		{name: "q only", args: `{"q":"guard"}`},
		{name: "limit at most", args: `{"q":"guard","limit":100}`},
		{name: "q missing", args: `{}`, wantErr: `"q" is empty`},
		{name: "no arguments", args: ``, wantErr: `"q" is empty`},
		{name: "q blank", args: `{"q":"  "}`, wantErr: `"q" is empty`},
		{name: "limit over", args: `{"q":"guard","limit":101}`, wantErr: `"limit" is 101; it must be between 1 and 100`},
		{name: "limit negative", args: `{"q":"guard","limit":-1}`, wantErr: `"limit" is -1`},
		{name: "limit not a number", args: `{"q":"guard","limit":"5"}`, wantErr: "bad arguments"},
		{name: "unknown field", args: `{"q":"guard","limt":5}`, wantErr: `unknown field "limt"`},
		{name: "bad query syntax", args: `{"q":"guard \"unclosed"}`, wantErr: `"q" "guard \"unclosed" is not a valid query (parse error: unterminated quote)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var res SearchResult
			err := call(t, x, "search", tt.args, &res)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("search %s: %v", tt.args, err)
			case tt.wantErr != "" && err == nil:
				t.Fatalf("search %s = %+v, want an error", tt.args, res)
			case tt.wantErr != "" && !strings.Contains(err.Error(), tt.wantErr):
				t.Errorf("error %q does not contain %q", err, tt.wantErr)
			}
		})
	}
}

func TestOnDisk(t *testing.T) {
	dir := writeTree(t, map[string]string{"one.md": "a monotonic note", "two.md": "another note"})
	path := filepath.Join(t.TempDir(), "sub", "index.bleve")
	cfg := Config{Root: dir, IndexPath: path}

	first := buildIndex(t, cfg, nil)
	if res := search(t, first, `{"q":"monotonic"}`); !slices.Equal(paths(res.Hits), []string{"one.md"}) {
		t.Errorf("hits = %q, want one.md", paths(res.Hits))
	}
	if !isIndex(path) {
		t.Fatalf("no index written at %s", path)
	}
	if err := first.close(); err != nil {
		t.Fatal(err)
	}

	// A later run (a restart, a re-apply) rebuilds over the old index, and
	// sees the files as they are now.
	if err := os.Remove(filepath.Join(dir, "one.md")); err != nil {
		t.Fatal(err)
	}
	second := buildIndex(t, cfg, nil)
	if res := search(t, second, `{"q":"note"}`); !slices.Equal(paths(res.Hits), []string{"two.md"}) {
		t.Errorf("hits = %q, want two.md only", paths(res.Hits))
	}
}

func TestBuildCancelled(t *testing.T) {
	s, err := Config{Root: corpusDir}.settings()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	x, err := build(ctx, s, hclog.NewNullLogger())
	if err == nil {
		_ = x.close()
		t.Fatal("build with a cancelled context succeeded")
	}
	if !strings.Contains(err.Error(), "indexing stopped after 0/") {
		t.Errorf("error = %v", err)
	}
}

func TestDefinition(t *testing.T) {
	def := newPlugin().definition()
	if def.Name != "index" || !slices.Equal(def.Provides, []string{"index"}) || def.Apply == nil || def.Stop == nil {
		t.Errorf("definition = %+v", def)
	}
	if err := newPlugin().stop(testkit.Context(t)); err != nil {
		t.Errorf("stop before apply: %v", err)
	}
}

func TestTrimCutWords(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{name: "whole text", in: "a **b** c", want: "a **b** c"},
		{name: "cut at both ends", in: "…he **guard** rule, cal…", want: "…**guard** rule,…"},
		{name: "match at the cut is kept", in: "…**uard** rule **gua**…", want: "…**uard** rule **gua**…"},
		{name: "one word", in: "…**guard**…", want: "…**guard**…"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := trimCutWords(tt.in); got != tt.want {
				t.Errorf("trimCutWords(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

// Progress lines are for folders large enough to take a while: ten of
// them, the last at the end.
func TestProgressStep(t *testing.T) {
	for _, tc := range []struct{ total, step int }{
		{0, 0}, {12, 0}, {progressMinFiles - 1, 0}, {progressMinFiles, progressMinFiles / progressSteps}, {12345, 1235},
	} {
		if got := progressStep(tc.total); got != tc.step {
			t.Errorf("progressStep(%d) = %d, want %d", tc.total, got, tc.step)
		}
	}
}
