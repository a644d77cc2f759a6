package auditlog

import (
	"bytes"
	"crypto/ed25519"
	"errors"
	"strings"
	"testing"
	"time"
)

// signedLog writes n call lines with a checkpoint by key after each line
// in at; rotate, when set, is a line after which key hands over to next.
func signedLog(t *testing.T, n int, at map[uint64]bool, key ed25519.PrivateKey, rotate uint64, next ed25519.PrivateKey) []byte {
	t.Helper()
	var b bytes.Buffer
	w := NewWriter(&b, Genesis)
	for i := 1; i <= n; i++ {
		if _, err := w.Append(Line{Time: time.Unix(int64(i), 0), ID: "c", Caller: "cli", Tool: "add", OK: true, ArgsSHA256: Digest(nil)}); err != nil {
			t.Fatal(err)
		}
		seq := uint64(i)
		if seq == rotate {
			c := SignCheckpoint(key, w.Tip(), next.Public().(ed25519.PublicKey))
			b.Write(append(c.Text(), '\n'))
			key = next
		}
		if at[seq] {
			c := SignCheckpoint(key, w.Tip(), nil)
			b.Write(append(c.Text(), '\n'))
		}
	}
	return b.Bytes()
}

func mustKey(t *testing.T) ed25519.PrivateKey {
	_, k, err := GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func TestCheckpointRoundTrip(t *testing.T) {
	k := mustKey(t)
	for _, next := range []ed25519.PublicKey{nil, mustKey(t).Public().(ed25519.PublicKey)} {
		c := SignCheckpoint(k, Tip{Seq: 7, Hash: strings.Repeat("a", 64)}, next)
		got, err := ParseCheckpoint(c.Text())
		if err != nil || got != c || !got.Verify(k.Public().(ed25519.PublicKey)) {
			t.Fatalf("round trip: %v %+v", err, got)
		}
		if !IsCheckpoint(c.Text()) {
			t.Fatal("IsCheckpoint")
		}
	}
	if _, err := ParseCheckpoint([]byte(`{"kind":"checkpoint", "seq":1}`)); err == nil {
		t.Fatal("a checkpoint not in canonical form was read")
	}
}

func TestVerifySigned(t *testing.T) {
	k1, k2 := mustKey(t), mustKey(t)
	pub1, pub2 := k1.Public().(ed25519.PublicKey), k2.Public().(ed25519.PublicKey)
	log := signedLog(t, 6, map[uint64]bool{2: true, 4: true, 5: true}, k1, 3, k2)
	t.Run("the old key follows the rotation", func(t *testing.T) {
		rep, err := VerifySigned(bytes.NewReader(log), pub1)
		if err != nil || rep.Signed.Seq != 5 || rep.Tip.Seq != 6 || rep.Rotations != 1 || rep.Checkpoints != 4 || rep.KeyID != KeyID(pub2) {
			t.Fatalf("%+v %v", rep, err)
		}
	})
	t.Run("the new key skips what came before it", func(t *testing.T) {
		rep, err := VerifySigned(bytes.NewReader(log), pub2)
		if err != nil || rep.Signed.Seq != 5 || rep.Unchecked != 2 || rep.Checkpoints != 2 {
			t.Fatalf("%+v %v", rep, err)
		}
	})
	t.Run("an unknown key signs nothing", func(t *testing.T) {
		rep, err := VerifySigned(bytes.NewReader(log), mustKey(t).Public().(ed25519.PublicKey))
		if err != nil || rep.Signed.Seq != 0 || rep.Unchecked != 4 {
			t.Fatalf("%+v %v", rep, err)
		}
	})
	t.Run("a retired key", func(t *testing.T) {
		var b bytes.Buffer
		b.Write(log)
		tip, _ := ReadTip(bytes.NewReader(log))
		c := SignCheckpoint(k1, tip, nil)
		b.Write(append(c.Text(), '\n'))
		_, err := VerifySigned(&b, pub1)
		var te *TamperError
		if !errors.As(err, &te) || !strings.Contains(te.Reason, "retired") {
			t.Fatalf("%v", err)
		}
	})
	t.Run("a forged signature", func(t *testing.T) {
		lines := bytes.Split(log, []byte("\n"))
		c, err := ParseCheckpoint(lines[2])
		if err != nil {
			t.Fatal(err)
		}
		c.Sig = SignCheckpoint(mustKey(t), Tip{Seq: c.Seq, Hash: c.Hash}, nil).Sig
		lines[2] = c.Text()
		_, err = VerifySigned(bytes.NewReader(bytes.Join(lines, []byte("\n"))), pub1)
		var te *TamperError
		if !errors.As(err, &te) || te.Line != 3 || !strings.Contains(te.Reason, "does not verify") {
			t.Fatalf("%v", err)
		}
	})
	t.Run("a moved checkpoint", func(t *testing.T) {
		lines := bytes.Split(log, []byte("\n"))
		lines[2], lines[3] = lines[3], lines[2]
		_, err := Verify(bytes.NewReader(bytes.Join(lines, []byte("\n"))))
		var te *TamperError
		if !errors.As(err, &te) || te.Line != 4 {
			t.Fatalf("%v", err)
		}
	})
}

func TestProve(t *testing.T) {
	k1, k2 := mustKey(t), mustKey(t)
	pub1, pub2 := k1.Public().(ed25519.PublicKey), k2.Public().(ed25519.PublicKey)
	log := signedLog(t, 6, map[uint64]bool{2: true, 5: true}, k1, 3, k2)
	prove := func(seq uint64) []byte {
		var b bytes.Buffer
		if err := Prove(bytes.NewReader(log), seq, &b); err != nil {
			t.Fatalf("prove %d: %v", seq, err)
		}
		return b.Bytes()
	}
	for _, c := range []struct {
		seq, signed uint64
		pub         ed25519.PublicKey
	}{{1, 2, pub1}, {2, 2, pub1}, {3, 3, pub1}, {4, 5, pub1}, {4, 5, pub2}} {
		rep, err := VerifyProof(bytes.NewReader(prove(c.seq)), c.pub)
		if err != nil || rep.Line.Seq != c.seq || rep.Signed.Seq != c.signed {
			t.Errorf("proof of %d: %+v %v", c.seq, rep, err)
		}
	}
	if _, err := VerifyProof(bytes.NewReader(prove(1)), pub2); err == nil {
		t.Error("a proof signed before the new key took over verified with it")
	}
	if err := Prove(bytes.NewReader(log), 6, &bytes.Buffer{}); !errors.Is(err, ErrNotSigned) {
		t.Errorf("prove an unsigned line: %v", err)
	}
	if err := Prove(bytes.NewReader(log), 9, &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), "has 6 lines") {
		t.Errorf("prove a line past the end: %v", err)
	}
	changed := bytes.Replace(prove(4), []byte(`"tool":"add"`), []byte(`"tool":"sub"`), 1)
	if _, err := VerifyProof(bytes.NewReader(changed), pub1); err == nil {
		t.Error("a changed proof verified")
	}
}
