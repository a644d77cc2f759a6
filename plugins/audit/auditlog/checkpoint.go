package auditlog

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
)

// checkpointPrefix starts every checkpoint line and no call line (those
// start with {"seq":), so a reader tells the two apart by their first bytes.
var checkpointPrefix = []byte(`{"kind":"checkpoint",`)

// signContext is put before a checkpoint's message when it is signed, so a
// signature made for anything else never verifies as a checkpoint's.
const signContext = "plugkit audit checkpoint v1\n"

// Checkpoint is a signed chain head: a line of its own in the log, written
// right after the line it signs. It is not a line of the chain (it has no
// prev, and the next call line chains to the call line before it), so a log
// with checkpoints verifies as one without them would, plus the checks below.
type Checkpoint struct {
	// Seq and Hash are the chain's tip where the checkpoint stands: the seq
	// and hash of the call line right before it (0 and ZeroHash at the top).
	Seq  uint64
	Hash string
	// NextKey, on a rotation, is the raw Ed25519 public key (base64) that
	// signs the checkpoints after this one; "" otherwise.
	NextKey string
	// Sig is the base64 Ed25519 signature of Message().
	Sig string
	// KeyID names the key that made Sig (KeyID of its public key).
	KeyID string
}

// KeyID names a public key: the first 16 hex digits of the SHA-256 of its
// 32 raw bytes.
func KeyID(pub ed25519.PublicKey) string {
	sum := sha256.Sum256(pub)
	return hex.EncodeToString(sum[:8])
}

// SignCheckpoint signs the tip with priv. next, when not nil, is the key
// that takes over after this checkpoint (a rotation).
func SignCheckpoint(priv ed25519.PrivateKey, tip Tip, next ed25519.PublicKey) Checkpoint {
	c := Checkpoint{Seq: tip.Seq, Hash: tip.Hash, KeyID: KeyID(priv.Public().(ed25519.PublicKey))}
	if next != nil {
		c.NextKey = base64.StdEncoding.EncodeToString(next)
	}
	c.Sig = base64.StdEncoding.EncodeToString(ed25519.Sign(priv, c.Message()))
	return c
}

// Message is what a checkpoint's signature covers: signContext, then the
// checkpoint's canonical line without its sig member, as in
//
//	plugkit audit checkpoint v1\n{"kind":"checkpoint","seq":7,"hash":"…","key_id":"…"}
//
// (with ,"next_key":"…" before key_id on a rotation).
func (c *Checkpoint) Message() []byte {
	b := append([]byte(signContext), c.appendHead(nil)...)
	b = append(b, `,"key_id":`...)
	b = appendString(b, c.KeyID)
	return append(b, '}')
}

// Text is the checkpoint's line without the newline:
//
//	{"kind":"checkpoint","seq":7,"hash":"…"[,"next_key":"…"],"sig":"…","key_id":"…"}
func (c *Checkpoint) Text() []byte {
	b := c.appendHead(nil)
	b = append(b, `,"sig":`...)
	b = appendString(b, c.Sig)
	b = append(b, `,"key_id":`...)
	b = appendString(b, c.KeyID)
	return append(b, '}')
}

func (c *Checkpoint) appendHead(b []byte) []byte {
	b = append(b, checkpointPrefix...)
	b = append(b, `"seq":`...)
	b = strconv.AppendUint(b, c.Seq, 10)
	b = append(b, `,"hash":`...)
	b = appendString(b, c.Hash)
	if c.NextKey != "" {
		b = append(b, `,"next_key":`...)
		b = appendString(b, c.NextKey)
	}
	return b
}

// Verify checks the signature with pub; it does not check that pub is the
// key KeyID names (Keyring does).
func (c *Checkpoint) Verify(pub ed25519.PublicKey) bool {
	sig, err := base64.StdEncoding.DecodeString(c.Sig)
	return err == nil && len(sig) == ed25519.SignatureSize && ed25519.Verify(pub, c.Message(), sig)
}

// Next is the key a rotation introduces, nil when c is not one.
func (c *Checkpoint) Next() (ed25519.PublicKey, error) {
	if c.NextKey == "" {
		return nil, nil
	}
	b, err := base64.StdEncoding.DecodeString(c.NextKey)
	if err != nil || len(b) != ed25519.PublicKeySize {
		return nil, errors.New("next_key is not a base64 Ed25519 public key")
	}
	return ed25519.PublicKey(b), nil
}

// IsCheckpoint says whether a line (without its newline) is a checkpoint
// rather than a call line.
func IsCheckpoint(text []byte) bool { return bytes.HasPrefix(text, checkpointPrefix) }

type checkpointJSON struct {
	Kind    string `json:"kind"`
	Seq     uint64 `json:"seq"`
	Hash    string `json:"hash"`
	NextKey string `json:"next_key"`
	Sig     string `json:"sig"`
	KeyID   string `json:"key_id"`
}

// ParseCheckpoint reads a checkpoint line (without its newline) and checks
// that it is in canonical form; it checks neither the chain nor the
// signature.
func ParseCheckpoint(text []byte) (Checkpoint, error) {
	var cj checkpointJSON
	dec := json.NewDecoder(bytes.NewReader(text))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&cj); err != nil {
		return Checkpoint{}, fmt.Errorf("bad checkpoint JSON: %v", err)
	}
	c := Checkpoint{Seq: cj.Seq, Hash: cj.Hash, NextKey: cj.NextKey, Sig: cj.Sig, KeyID: cj.KeyID}
	if canon := c.Text(); !bytes.Equal(canon, text) {
		return Checkpoint{}, fmt.Errorf("checkpoint not in canonical form from byte %d", firstDiff(canon, text)+1)
	}
	if !isHash(c.Hash) {
		return Checkpoint{}, errors.New("checkpoint hash is not 64 lowercase hex digits")
	}
	if _, err := c.Next(); err != nil {
		return Checkpoint{}, err
	}
	return c, nil
}
