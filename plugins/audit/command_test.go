package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/plugkit-go/plugkit/plugins/audit/auditlog"
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
	partialPath := write("partial.log", good[:len(good)-30])
	ls := bytes.SplitAfter(good, []byte("\n"))
	third, err := auditlog.ParseLine(bytes.TrimSuffix(ls[2], []byte("\n")))
	if err != nil {
		t.Fatal(err)
	}
	cutPath := write("cut.log", bytes.Join(ls[:2], nil))

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
		{"partial last line", []string{"verify", partialPath}, 0, "ok: 3 lines intact, then part of a line (" + strconv.Itoa(len(ls[3])-30) + " bytes) that a write cut short, not part of the chain\n", "", true},
		{"expected head found", []string{"verify", "--expect-head", third.Hash, goodPath}, 0, "ok: 4 lines intact\nexpected head found at line 3\n", "", true},
		{"expected head after the file", []string{"verify", goodPath, "--expect-head", third.Hash}, 0, "ok: 4 lines intact\nexpected head found at line 3\n", "", true},
		{"expected head cut off", []string{"verify", "--expect-head", third.Hash, cutPath}, 1, cutPath + ": the expected head " + third.Hash + " is not in the log (2 lines intact): it was cut short before that line, or rewritten\n", "", true},
		{"no file", []string{"verify"}, 2, "", "usage: audit verify [--expect-head HASH] [--key PUBKEY] FILE", false},
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
