package vault

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/plugkit-go/plugkit/internal/testkit/testkit"
	"github.com/plugkit-go/plugkit/internal/testkit/testredis"
)

// TestTempRecordsShared: a temporary record put by one replica is read and
// taken by another, taken once of two concurrent takers, sealed in Redis,
// and gone after its time; a file vault has none.
func TestTempRecordsShared(t *testing.T) {
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
	if !a.Shared() {
		t.Fatal("a Redis vault says it is not shared")
	}
	if err := a.PutTemp(ctx, "pending\x00x", []byte("verifier-SECRET"), time.Minute); err != nil {
		t.Fatal(err)
	}
	if got, ok, err := b.GetTemp(ctx, "pending\x00x"); err != nil || !ok || string(got) != "verifier-SECRET" {
		t.Fatalf("the other replica's GetTemp = %q %v %v", got, ok, err)
	}
	s, _ := NewRedisStore(srv.URL())
	defer s.Close()
	if raw, ok, _ := s.GetTemp(ctx, "pending\x00x"); !ok || strings.Contains(string(raw), "SECRET") {
		t.Errorf("Redis holds the temporary record in the clear, or none (%v)", ok)
	}
	// A record copied under another name does not open.
	raw, _, _ := s.GetTemp(ctx, "pending\x00x")
	if err := s.PutTemp(ctx, "pending\x00y", raw, time.Minute); err != nil {
		t.Fatal(err)
	}
	if _, _, err := b.GetTemp(ctx, "pending\x00y"); err == nil {
		t.Error("a record moved to another name opened")
	}
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		taken int
	)
	for _, v := range []*Vault{a, b, a, b} {
		wg.Go(func() {
			if _, ok, err := v.TakeTemp(ctx, "pending\x00x"); err != nil {
				t.Error(err)
			} else if ok {
				mu.Lock()
				taken++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if taken != 1 {
		t.Errorf("the record was taken %d times; want once", taken)
	}
	if err := a.PutTemp(ctx, "short", []byte("x"), 50*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if !testkit.Eventually(10*time.Second, func() bool {
		_, ok, err := b.GetTemp(ctx, "short")
		if err != nil {
			t.Fatal(err)
		}
		return !ok
	}) {
		t.Fatal("a temporary record outlived its time")
	}

	dir := t.TempDir()
	fv, err := Open(keyFile, NewFileStore(filepath.Join(dir, "tokens.vault")))
	if err != nil {
		t.Fatal(err)
	}
	if fv.Shared() {
		t.Error("a file vault says it is shared")
	}
	if err := fv.PutTemp(ctx, "x", nil, time.Minute); !errors.Is(err, ErrNotShared) {
		t.Errorf("PutTemp in a file vault: %v", err)
	}
}
