package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestVerifyCommand(t *testing.T) {
	dir := t.TempDir()
	good := func() []byte {
		h := newHarness()
		s := logSettings(t)
		h.mustStart(t, s)
		observeN(h, 0, 4)
		h.mustStop(t)
		data, _ := os.ReadFile(s.path)
		return data
	}()
	write := func(name string, data []byte) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	goodPath := write("good.log", good)
	emptyPath := write("empty.log", nil)
	badPath := write("bad.log", bytes.Replace(good, []byte(`"call-2"`), []byte(`"call-X"`), 1))
	missing := filepath.Join(dir, "missing.log")

	for _, tc := range []struct {
		name       string
		args       []string
		code       int
		stdout     string // exact
		stderrHas  string
		stderrNone bool
	}{
		{"intact", []string{"verify", goodPath}, 0, "ok: 4 lines intact\n", "", true},
		{"empty", []string{"verify", emptyPath}, 0, "ok: 0 lines intact\n", "", true},
		{"tampered", []string{"verify", badPath}, 1, badPath + ":3: tampered: hash does not match the line's content\n", "", true},
		{"missing", []string{"verify", missing}, 2, "", "no such file", false},
		{"no file", []string{"verify"}, 2, "", "usage: audit verify FILE", false},
		{"two files", []string{"verify", goodPath, badPath}, 2, "", "usage:", false},
		{"unknown", []string{"check", goodPath}, 2, "", "usage:", false},
		{"help", []string{"--help"}, 0, usage, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(tc.args, &stdout, &stderr)
			if code != tc.code || stdout.String() != tc.stdout {
				t.Errorf("run(%q) = %d, stdout %q; want %d, %q", tc.args, code, stdout.String(), tc.code, tc.stdout)
			}
			if !strings.Contains(stderr.String(), tc.stderrHas) || tc.stderrNone && stderr.Len() > 0 {
				t.Errorf("stderr %q; want it to contain %q", stderr.String(), tc.stderrHas)
			}
		})
	}
}
