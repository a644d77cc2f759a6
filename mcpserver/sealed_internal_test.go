package mcpserver

import (
	"bytes"
	"errors"
	"testing"
	"time"
)

func key(b byte) []byte { return bytes.Repeat([]byte{b}, StateKeyBytes) }

func TestSealedState(t *testing.T) {
	now := time.Now()
	old, err := newSealer([][]byte{key(1)})
	if err != nil {
		t.Fatal(err)
	}
	ask := sealedAsk{Principal: "user:ann", Tool: "delete", Args: digest(canonicalArgs([]byte(`{"b":1,"a":[2.50,"x"]}`))), Question: "q", Call: "c1", Expires: now.Add(time.Minute).UnixMilli()}
	state := old.seal(ask)

	// Rotation: a key put first seals from then on, the old one still opens.
	rotated, _ := newSealer([][]byte{key(2), key(1)})
	got, err := rotated.open(state, now)
	if err != nil || got.Principal != "user:ann" || got.Tool != "delete" || got.Args != ask.Args {
		t.Fatalf("open with the old key second: %+v, %v", got, err)
	}
	if _, err := old.open(rotated.seal(ask), now); !errors.Is(err, errState) {
		t.Fatalf("a state sealed with a key the replica lacks: %v, want refused", err)
	}
	other, _ := newSealer([][]byte{key(3)})
	if _, err := other.open(state, now); !errors.Is(err, errState) {
		t.Fatalf("another key: %v, want refused", err)
	}
	for _, bad := range []string{"", "pk1.", "pk1.!!!", state[:len(state)-1], "pk2." + state[4:], state + "A"} {
		if _, err := old.open(bad, now); !errors.Is(err, errState) {
			t.Errorf("open(%q): %v, want refused", bad, err)
		}
	}
	if _, err := old.open(state, now.Add(2*time.Minute)); !errors.Is(err, errLate) {
		t.Fatalf("expired: %v, want errLate", err)
	}
	a, _ := old.open(state, now)
	if !old.spend(a, now) || old.spend(a, now) {
		t.Fatal("a state must be spent once on a replica")
	}
	if _, err := newSealer([][]byte{key(1)[:16]}); err == nil {
		t.Fatal("a 16-byte key was taken")
	}
}

func TestCanonicalArgs(t *testing.T) {
	for _, c := range []struct{ a, b string }{
		{`{"a":1,"b":"x"}`, ` { "b" : "x", "a" : 1 } `},
		{``, `null`},
		{`{}`, ``},
	} {
		if canonicalArgs([]byte(c.a)) != canonicalArgs([]byte(c.b)) {
			t.Errorf("%q and %q hash apart", c.a, c.b)
		}
	}
	for _, c := range []struct{ a, b string }{
		{`{"a":1}`, `{"a":1.0}`}, // numbers as written: the tool may tell them apart
		{`{"a":1}`, `{"a":"1"}`},
	} {
		if canonicalArgs([]byte(c.a)) == canonicalArgs([]byte(c.b)) {
			t.Errorf("%q and %q hash the same", c.a, c.b)
		}
	}
}
