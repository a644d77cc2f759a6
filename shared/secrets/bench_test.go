package secrets

import (
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// sourceText returns n bytes of the repository's own Go source and docs:
// text full of the generic rule's keywords (key, token, auth, api…), which
// makes it a hard case for a keyword pre-filter.
func sourceText(b *testing.B, n int) string {
	b.Helper()
	var sb strings.Builder
	err := filepath.WalkDir(filepath.Join("..", "..", ".."), func(p string, d fs.DirEntry, err error) error {
		if err != nil || sb.Len() >= n {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "bin" || d.Name() == "run") {
			return filepath.SkipDir
		}
		if ext := filepath.Ext(p); (ext == ".go" && !strings.HasSuffix(p, "_test.go")) || ext == ".md" {
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			sb.Write(data)
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	for sb.Len() < n {
		sb.WriteString(sb.String())
	}
	return sb.String()[:n]
}

// BenchmarkRedactResult is the stage-4 scan of a tool's result: a JSON
// object whose content is n bytes of text, redacted (here: nothing to
// redact, the common case, and the whole value is scanned). Its baseline,
// in the same run, is BenchmarkJSONValid: one pass of encoding/json's
// validator over the same bytes, which every result costs anyway.
func BenchmarkRedactResult(b *testing.B) {
	for _, size := range sizes {
		b.Run(size.name, func(b *testing.B) {
			raw := result(b, size.n)
			// The package docs quote AWS's published example key id.
			s := New([]string{"AKIAIOSFODNN7EXAMPLE"})
			b.SetBytes(int64(len(raw)))
			b.ResetTimer()
			for b.Loop() {
				if _, hits, err := s.RedactJSON(raw); err != nil || len(hits) != 0 {
					b.Fatalf("hits %v, err %v", hits, err)
				}
			}
		})
	}
}

var sizes = []struct {
	name string
	n    int
}{{"1KiB", 1 << 10}, {"1MiB", 1 << 20}}

func result(b *testing.B, n int) []byte {
	raw, err := json.Marshal(map[string]any{"path": "notes.md", "content": sourceText(b, n), "size": n})
	if err != nil {
		b.Fatal(err)
	}
	return raw
}

func BenchmarkJSONValid(b *testing.B) {
	for _, size := range sizes {
		b.Run(size.name, func(b *testing.B) {
			raw := result(b, size.n)
			b.SetBytes(int64(len(raw)))
			b.ResetTimer()
			for b.Loop() {
				if !json.Valid(raw) {
					b.Fatal("not JSON")
				}
			}
		})
	}
}
