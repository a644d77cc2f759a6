package vault

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"
)

// keyring seals with its first key and opens with any.
type keyring []cipher.AEAD

// LoadKeys reads a key file: one AES-256 key a line as 64 hex digits, the
// first the one that seals. A file its owner alone may not read is refused.
func LoadKeys(path string) (keyring, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("vault key file: %w", err)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("vault key file %s is readable or writable by others (mode %04o): chmod 600 it", path, fi.Mode().Perm())
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("vault key file: %w", err)
	}
	var ring keyring
	for i, line := range strings.Split(string(raw), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, err := hex.DecodeString(line)
		if err != nil || len(k) != 32 {
			return nil, fmt.Errorf("vault key file %s, line %d: not 64 hex digits (32 random bytes)", path, i+1)
		}
		a, err := aeadOf(k)
		if err != nil {
			return nil, err
		}
		ring = append(ring, a)
	}
	if len(ring) == 0 {
		return nil, fmt.Errorf("vault key file %s holds no key", path)
	}
	return ring, nil
}

func aeadOf(k []byte) (cipher.AEAD, error) {
	b, err := aes.NewCipher(k)
	if err != nil {
		return nil, fmt.Errorf("vault key: %w", err)
	}
	return cipher.NewGCM(b)
}

// seal is nonce || ciphertext of plain, bound to ad.
func (r keyring) seal(plain, ad []byte) []byte {
	a := r[0]
	nonce := make([]byte, a.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		panic(fmt.Sprintf("vault: no randomness: %v", err))
	}
	return a.Seal(nonce, nonce, plain, ad)
}

var errOpen = errors.New("no key of the key file opens it (another key, or the record was moved)")

func (r keyring) open(sealed, ad []byte) ([]byte, error) {
	for _, a := range r {
		n := a.NonceSize()
		if len(sealed) < n {
			return nil, errOpen
		}
		if plain, err := a.Open(nil, sealed[:n], sealed[n:], ad); err == nil {
			return plain, nil
		}
	}
	return nil, errOpen
}
