package authn

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/golang-jwt/jwt/v5"
)

// FuzzLoadKeys: whatever a keys file holds, LoadKeys returns keys or
// diagnostics and never panics or overflows its stack.
func FuzzLoadKeys(f *testing.F) {
	f.Add([]byte("key \"ci\" {\n  sha256 = \"9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08\"\n  kind = \"agent\"\n  attributes = [\"group:readers\"]\n}\n"))
	f.Add([]byte("key \"a\" {\n  attributes = [[[[[]]]]]\n}\n"))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, src []byte) {
		path := filepath.Join(dir, "keys.hcl")
		if err := os.WriteFile(path, src, 0o600); err != nil {
			t.Fatal(err)
		}
		k, diags := LoadKeys(path)
		if k == nil && !diags.HasErrors() {
			t.Fatal("no keys and no error")
		}
	})
}

// FuzzGroupsClaim: a claim of any JSON shape is either groups that are
// all non-empty strings or an error; never silently nothing when present.
func FuzzGroupsClaim(f *testing.F) {
	for _, s := range []string{`["a","b"]`, `"a"`, `{"a":1}`, `[1]`, `null`, `""`, `[]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		var v any
		if json.Unmarshal(raw, &v) != nil {
			return
		}
		groups, err := groupsClaim(jwt.MapClaims{"groups": v}, "groups")
		if err != nil {
			return
		}
		for _, g := range groups {
			if g == "" {
				t.Fatalf("%s: an empty group", raw)
			}
		}
		if _, isList := v.([]any); !isList && len(groups) != 1 {
			t.Fatalf("%s read as %v", raw, groups)
		}
	})
}
