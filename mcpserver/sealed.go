package mcpserver

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/plugkit-go/plugkit/deployment"
)

// A stateless (2026-07-28) client's Ask leaves nothing behind on the
// replica that asked: the question's requestState is sealed (AES-256-GCM)
// with a key every replica holds, and names what the answer may approve.
// The retry, on whichever replica it lands, opens it and runs the call
// again; the sealed question binds the answer to that call alone.

// StateKeyBytes is the size of a requestState key (AES-256).
const StateKeyBytes = deployment.StateKeyBytes

// sealedPrefix marks a sealed requestState and its format's version.
const sealedPrefix = "pk1."

// sealedAAD ties a sealed state to its use: a value sealed with the same
// key for another purpose does not open as one.
var sealedAAD = []byte("plugkit mcp requestState v1")

// errState is what a retry whose requestState does not hold is told: it
// does not say which check failed.
var errState = errors.New("requestState is not one this gateway issued for this call (tampered, already answered, or for another caller or request)")

// errLate is what a retry whose answer came after the approval timeout is
// told: the call was not approved in time, as a session's would not be.
var errLate = errors.New("requestState expired: the answer came after the approval timeout; make the call again")

// sealedAsk is what a sealed requestState holds.
type sealedAsk struct {
	// Principal is who the call was made for; the retry must be made
	// for the same.
	Principal string `json:"p"`
	// Tool and Args are the request (args as the SHA-256 of its
	// canonical JSON); the retry must repeat them.
	Tool string `json:"t"`
	Args string `json:"a"`
	// Question is the SHA-256 of the question's tool and arguments as the
	// user was shown them; only the same question is answered again.
	Question string `json:"q"`
	// Input is the key the question has in the input-required result:
	// approvalInput for an Ask, elicitInput for a plugin's question.
	Input string `json:"i,omitempty"`
	// Answers are those the client gave in earlier rounds of the same
	// call, given again in the next run (inputrequired.go).
	Answers []carried `json:"r,omitempty"`
	// Call is the id of the call that asked, for the logs.
	Call string `json:"c"`
	// Expires is when the answer stops counting (Unix milliseconds): the
	// approval timeout after the question was asked.
	Expires int64 `json:"e"`
	// Nonce makes each state single-use on a replica.
	Nonce string `json:"n"`
}

// sealer seals and opens requestStates. The first key seals; every key
// opens, so that a key can be rotated in before it is used (see
// LoadStateKeys).
type sealer struct {
	aeads atomic.Pointer[[]cipher.AEAD] // replaced whole on a reload

	mu   sync.Mutex
	used map[string]int64 // nonce → expiry: states answered on this replica
}

func newSealer(keys [][]byte) (*sealer, error) {
	s := &sealer{used: map[string]int64{}}
	return s, s.setKeys(keys)
}

// setKeys replaces the keys; with none, a key of this process's own, so
// that only this replica opens its states.
func (s *sealer) setKeys(keys [][]byte) error {
	if len(keys) == 0 {
		k := make([]byte, StateKeyBytes)
		rand.Read(k)
		keys = [][]byte{k}
	}
	var aeads []cipher.AEAD
	for i, k := range keys {
		if len(k) != StateKeyBytes {
			return fmt.Errorf("requestState key %d: %d bytes, want %d", i+1, len(k), StateKeyBytes)
		}
		block, err := aes.NewCipher(k)
		if err != nil {
			return fmt.Errorf("requestState key %d: %w", i+1, err)
		}
		aead, err := cipher.NewGCM(block)
		if err != nil {
			return fmt.Errorf("requestState key %d: %w", i+1, err)
		}
		aeads = append(aeads, aead)
	}
	s.aeads.Store(&aeads)
	return nil
}

func (s *sealer) seal(a sealedAsk) string {
	a.Nonce = rand.Text()
	plain, _ := json.Marshal(a) // plain strings and a number
	aead := (*s.aeads.Load())[0]
	nonce := make([]byte, aead.NonceSize())
	rand.Read(nonce)
	return sealedPrefix + base64.RawURLEncoding.EncodeToString(aead.Seal(nonce, nonce, plain, sealedAAD))
}

// open reads a state sealed by any of the keys that has not expired at now.
func (s *sealer) open(state string, now time.Time) (sealedAsk, error) {
	var a sealedAsk
	raw, ok := strings.CutPrefix(state, sealedPrefix)
	if !ok {
		return a, errState
	}
	box, err := base64.RawURLEncoding.DecodeString(raw)
	if err != nil {
		return a, errState
	}
	for _, aead := range *s.aeads.Load() {
		n := aead.NonceSize()
		if len(box) < n+aead.Overhead() {
			return a, errState
		}
		plain, err := aead.Open(nil, box[:n], box[n:], sealedAAD)
		if err != nil {
			continue
		}
		if json.Unmarshal(plain, &a) != nil || a.Nonce == "" {
			return sealedAsk{}, errState
		}
		if now.UnixMilli() > a.Expires {
			return sealedAsk{}, errLate
		}
		return a, nil
	}
	return a, errState
}

// spend marks a state's nonce answered, and says false if it already was
// on this replica. Expired ones are forgotten as new ones come.
func (s *sealer) spend(a sealedAsk, now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for n, exp := range s.used {
		if now.UnixMilli() > exp {
			delete(s.used, n)
		}
	}
	if _, ok := s.used[a.Nonce]; ok {
		return false
	}
	s.used[a.Nonce] = a.Expires
	return true
}

// digest is the SHA-256 of parts, each length-prefixed, in hex.
func digest(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		fmt.Fprintf(h, "%d:%s", len(p), p)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// canonicalArgs is arguments as JSON with object keys sorted and numbers
// as written, so that the same arguments hash the same however the client
// spaced or ordered them; a value that is not JSON is taken as it is.
func canonicalArgs(raw []byte) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "{}"
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil {
		return string(raw)
	}
	out, err := json.Marshal(v)
	if err != nil {
		return string(raw)
	}
	return string(out)
}
