package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/plugkit-go/plugkit/plugins/audit/auditlog"
)

// keyFile writes a new private key into dir and returns its path and the
// public key's.
func keyFile(t testing.TB, dir, name string) (string, string) {
	t.Helper()
	path := filepath.Join(dir, name)
	var out, errb strings.Builder
	if code := run([]string{"keygen", path}, &out, &errb); code != 0 {
		t.Fatalf("keygen: %s", errb.String())
	}
	return path, path + ".pub"
}

func signedSettings(t testing.TB, c Config) settings {
	t.Helper()
	s, err := c.settings()
	if err != nil {
		t.Fatal(err)
	}
	if s.keys, err = loadKeys(s); err != nil {
		t.Fatal(err)
	}
	return s
}

// TestSignedLog: checkpoints every sign_every while lines are written, one
// at stop, none while nothing is written; the log verifies with the public
// key, and a reopened log goes on without signing again what is signed.
func TestSignedLog(t *testing.T) {
	dir := t.TempDir()
	key, pub := keyFile(t, dir, "audit.key")
	path := filepath.Join(dir, "audit.log")
	s := signedSettings(t, Config{Path: path, Key: key, SignEvery: "20ms"})
	h := newHarness()
	h.mustStart(t, s)
	observeN(h, 0, 3)
	time.Sleep(100 * time.Millisecond) // several intervals, one with lines
	observeN(h, 3, 5)
	h.mustStop(t)
	h.mustStart(t, s)
	h.mustStop(t)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// At least one while the test paused and one at stop; never two of
	// one seq (an idle interval or the reopened log signs nothing again).
	seen := map[uint64]bool{}
	for _, l := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		if c, err := auditlog.ParseCheckpoint([]byte(l)); err == nil {
			if seen[c.Seq] {
				t.Errorf("seq %d signed twice:\n%s", c.Seq, data)
			}
			seen[c.Seq] = true
		}
	}
	if len(seen) < 2 || !seen[5] {
		t.Errorf("checkpoints at %v, want some before seq 5 and one at 5:\n%s", seen, data)
	}
	var out, errb strings.Builder
	if code := run([]string{"verify", "--key", pub, path}, &out, &errb); code != 0 || !strings.Contains(out.String(), "signed: up to seq 5 ") {
		t.Fatalf("verify --key: %d %s %s", code, out.String(), errb.String())
	}
}

func TestSigningSettings(t *testing.T) {
	for _, c := range []Config{
		{Path: "x", SignEvery: "1s"},
		{Path: "x", PreviousKey: "k"},
		{Path: "x", Key: "k", SignEvery: "0s"},
	} {
		if _, err := c.settings(); err == nil {
			t.Errorf("%+v: accepted", c)
		}
	}
	dir := t.TempDir()
	key, _ := keyFile(t, dir, "a.key")
	if _, err := loadKeys(settings{keyPath: key, prevKeyPath: key}); err == nil {
		t.Error("previous_key = key accepted")
	}
	if _, err := loadKeys(settings{keyPath: filepath.Join(dir, "missing")}); err == nil {
		t.Error("a missing key file accepted")
	}
}

// BenchmarkAuditWrite is the cost of one result's line, without and with
// signing (the default sign_every): a checkpoint once a second must not
// show. fsync = never, so that the disk does not hide the difference.
func BenchmarkAuditWrite(b *testing.B) {
	for _, signed := range []bool{false, true} {
		name := "unsigned"
		if signed {
			name = "signed"
		}
		b.Run(name, func(b *testing.B) {
			dir := b.TempDir()
			c := Config{Path: filepath.Join(dir, "audit.log"), Fsync: "never"}
			if signed {
				c.Key, _ = keyFile(b, dir, "audit.key")
			}
			s := signedSettings(b, c)
			a := newAuditor()
			if err := a.start(s, hclog.NewNullLogger()); err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				call, r := result(i)
				if _, ok := a.observeWithReceipt(ctx, call, r); !ok {
					b.Fatal("no receipt")
				}
			}
			b.StopTimer()
			if err := a.stop(); err != nil {
				b.Fatal(err)
			}
			if signed {
				f, _ := os.Open(c.Path)
				defer f.Close()
				pub, _ := auditlog.ReadPublicKey(c.Key + ".pub")
				if rep, err := auditlog.VerifySigned(f, pub); err != nil || rep.Signed != rep.Tip {
					b.Fatalf("%+v %v", rep, err)
				}
			}
		})
	}
}

// TestVerifyKeySignedNothing: --key fails when the key signed no checkpoint
// of the log (all by another key: exit 1; none at all: exit 3), and prove
// exits 3 for a line no checkpoint follows, as the usage says.
func TestVerifyKeySignedNothing(t *testing.T) {
	dir := t.TempDir()
	key, pub := keyFile(t, dir, "audit.key")
	_, otherPub := keyFile(t, dir, "other.key")
	signed := filepath.Join(dir, "signed.log")
	h := newHarness()
	h.mustStart(t, signedSettings(t, Config{Path: signed, Key: key}))
	observeN(h, 0, 3)
	h.mustStop(t)
	unsigned := logSettings(t)
	h = newHarness()
	h.mustStart(t, unsigned)
	observeN(h, 0, 2)
	h.mustStop(t)

	for _, tc := range []struct {
		name string
		args []string
		code int
		has  string
	}{
		{"its own key", []string{"verify", "--key", pub, signed}, 0, "signed: up to seq 3 "},
		{"another key", []string{"verify", "--key", otherPub, signed}, 1, "no checkpoint is signed by key"},
		{"no checkpoint", []string{"verify", "--key", pub, unsigned.path}, 3, "no checkpoint signs any of its 2 lines"},
		{"prove signed", []string{"prove", "2", signed}, 0, ""},
		{"prove unsigned", []string{"prove", "1", unsigned.path}, 3, "no checkpoint signs it yet"},
		{"prove past the end", []string{"prove", "9", signed}, 2, "has no line 9"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb strings.Builder
			code := run(tc.args, &out, &errb)
			if code != tc.code || !strings.Contains(out.String()+errb.String(), tc.has) {
				t.Errorf("run(%q) = %d, stdout %q, stderr %q; want %d and %q", tc.args, code, out.String(), errb.String(), tc.code, tc.has)
			}
		})
	}
}

// TestKeygenMakesFolder: keygen keys/audit.key works where keys does not
// exist yet, and makes it private.
func TestKeygenMakesFolder(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "keys")
	key, pub := keyFile(t, dir, "audit.key")
	for _, p := range []string{key, pub} {
		if _, err := os.Stat(p); err != nil {
			t.Fatal(err)
		}
	}
	fi, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o700 {
		t.Fatalf("keys folder mode %v, want 0700", fi.Mode().Perm())
	}
}
