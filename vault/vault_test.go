package vault

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/plugkit-go/plugkit/internal/testkit/testredis"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func writeKeys(t *testing.T, dir string, n int) (string, []string) {
	t.Helper()
	var keys []string
	for range n {
		b := make([]byte, 32)
		if _, err := rand.Read(b); err != nil {
			t.Fatal(err)
		}
		keys = append(keys, hex.EncodeToString(b))
	}
	path := filepath.Join(dir, "vault.key")
	if err := os.WriteFile(path, []byte(strings.Join(keys, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return path, keys
}

var aliceTok = Token{Upstream: "https://up.example/mcp", AccessToken: "at-alice-SECRET", RefreshToken: "rt-alice-SECRET",
	Expiry: time.Now().Add(time.Hour).Round(0).UTC(), Scope: "issues:read", TokenURL: "https://as.example/token", ClientID: "plugkit"}

func TestFileVaultSealsEachRecord(t *testing.T) {
	dir := t.TempDir()
	keyFile, keys := writeKeys(t, dir, 1)
	file := filepath.Join(dir, "tokens.vault")
	v, err := Open(keyFile, NewFileStore(file))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := v.Put(ctx, "user:alice", "gh", aliceTok); err != nil {
		t.Fatal(err)
	}
	if err := v.Put(ctx, "user:bob", "gh", Token{Upstream: "u", AccessToken: "at-bob-SECRET"}); err != nil {
		t.Fatal(err)
	}
	got, ok, err := v.Get(ctx, "user:alice", "gh")
	if err != nil || !ok || got.AccessToken != aliceTok.AccessToken || got.RefreshToken != aliceTok.RefreshToken || !got.Expiry.Equal(aliceTok.Expiry) {
		t.Fatalf("Get = %+v, %v, %v", got, ok, err)
	}
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{"SECRET", "at-alice", "rt-alice", keys[0]} {
		if strings.Contains(string(raw), secret) {
			t.Errorf("the vault file holds %q in the clear", secret)
		}
	}
	if fi, _ := os.Stat(file); fi.Mode().Perm() != 0o600 {
		t.Errorf("vault file mode %04o; want 0600", fi.Mode().Perm())
	}
	if _, ok, _ := v.Get(ctx, "user:carol", "gh"); ok {
		t.Error("carol has a token she never got")
	}
	if s := aliceTok.String(); strings.Contains(s, "SECRET") {
		t.Errorf("a token prints: %s", s)
	}

	// A record copied under another principal's key does not open.
	fs := NewFileStore(file)
	sealed, _, _ := fs.Get(ctx, recordKey("user:alice", "gh"))
	if err := fs.Put(ctx, recordKey("user:bob", "gh"), sealed); err != nil {
		t.Fatal(err)
	}
	if _, _, err := v.Get(ctx, "user:bob", "gh"); err == nil || !strings.Contains(err.Error(), "no key of the key file opens it") {
		t.Errorf("alice's record under bob's key: %v; want it refused", err)
	}

	list, err := v.List(ctx, "user:alice")
	if err != nil || len(list) != 1 || list[0].Plugin != "gh" || list[0].Upstream != aliceTok.Upstream || !list[0].Refresh {
		t.Fatalf("List = %+v, %v", list, err)
	}
	if err := v.Delete(ctx, "user:alice", "gh"); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := v.Get(ctx, "user:alice", "gh"); ok {
		t.Error("a deleted token is still there")
	}
}

func TestKeyRotation(t *testing.T) {
	dir := t.TempDir()
	keyFile, keys := writeKeys(t, dir, 2)
	store := NewFileStore(filepath.Join(dir, "tokens.vault"))
	ctx := context.Background()
	// Sealed with the old key alone.
	if err := os.WriteFile(keyFile, []byte(keys[1]+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	old, err := Open(keyFile, store)
	if err != nil {
		t.Fatal(err)
	}
	if err := old.Put(ctx, "user:alice", "gh", aliceTok); err != nil {
		t.Fatal(err)
	}
	// The new key first, the old below: the record opens, a write seals
	// with the new key.
	if err := os.WriteFile(keyFile, []byte(keys[0]+"\n"+keys[1]+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	both, err := Open(keyFile, store)
	if err != nil {
		t.Fatal(err)
	}
	tok, ok, err := both.Get(ctx, "user:alice", "gh")
	if err != nil || !ok {
		t.Fatalf("with both keys: %v %v", ok, err)
	}
	if err := both.Put(ctx, "user:alice", "gh", tok); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, []byte(keys[0]+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	only, err := Open(keyFile, store)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, err := only.Get(ctx, "user:alice", "gh"); err != nil || !ok {
		t.Fatalf("the rewritten record under the new key alone: %v %v", ok, err)
	}
}

func TestKeyFileRefused(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "k")
	for _, c := range []struct {
		body string
		mode os.FileMode
		want string
	}{
		{strings.Repeat("ab", 32), 0o644, "readable or writable by others"},
		{"xyz", 0o600, "line 1: not 64 hex digits"},
		{strings.Repeat("ab", 16), 0o600, "line 1: not 64 hex digits"},
		{"# nothing\n", 0o600, "holds no key"},
	} {
		if err := os.WriteFile(path, []byte(c.body), c.mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(path, c.mode); err != nil {
			t.Fatal(err)
		}
		if _, err := LoadKeys(path); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q mode %04o: %v; want %q", c.body, c.mode, err, c.want)
		}
	}
}

func TestRedisVaultShared(t *testing.T) {
	testredis.VerifyNoGoroutines(t)
	srv := testredis.Start(t)
	keyFile, _ := writeKeys(t, t.TempDir(), 1)
	open := func() *Vault {
		s, err := NewRedisStore(srv.URL())
		if err != nil {
			t.Fatal(err)
		}
		v, err := Open(keyFile, s)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { v.Close() })
		return v
	}
	a, b := open(), open()
	ctx := context.Background()
	if err := a.Put(ctx, "user:alice", "gh", aliceTok); err != nil {
		t.Fatal(err)
	}
	got, ok, err := b.Get(ctx, "user:alice", "gh")
	if err != nil || !ok || got.AccessToken != aliceTok.AccessToken {
		t.Fatalf("the other replica's Get = %v %v", ok, err)
	}
	s, _ := NewRedisStore(srv.URL())
	defer s.Close()
	raw, _, _ := s.Get(ctx, recordKey("user:alice", "gh"))
	if strings.Contains(string(raw), "SECRET") {
		t.Error("Redis holds the token in the clear")
	}
}
