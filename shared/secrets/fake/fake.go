// Package fake makes fake credentials for tests: each has the format (and
// checksum, where the format has one) of the real thing and grants nothing.
// They are made at run time from a seed, so that no credential-shaped
// string needs to be committed, and a failure can be replayed.
package fake

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/hmac"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"hash/crc32"
	mrand "math/rand/v2"
	"strings"
	"testing"
)

// Alphabets.
const (
	Upper  = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
	Lower  = "abcdefghijklmnopqrstuvwxyz"
	Digits = "0123456789"
	Base62 = Digits + Upper + Lower
	Base32 = Upper + "234567"
	Base64 = Upper + Lower + Digits + "+/"
)

// Maker makes fake credentials from a seed. It is not safe for concurrent
// use.
type Maker struct{ r *mrand.Rand }

// New returns a maker seeded with seed.
func New(seed uint64) *Maker {
	return &Maker{mrand.New(mrand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
}

// Pick returns n bytes drawn from alphabet.
func (f *Maker) Pick(alphabet string, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = alphabet[f.r.IntN(len(alphabet))]
	}
	return string(b)
}

// AWSAccessKey is an access key id: AKIA and 16 base32 characters.
func (f *Maker) AWSAccessKey() string { return "AKIA" + f.Pick(Base32, 16) }

// AWSSecretKey is a secret access key: 40 base64 characters.
func (f *Maker) AWSSecretKey() string { return f.Pick(Base64, 40) }

// GitHubToken is a classic GitHub token: prefix, 30 random Base62
// characters, then the CRC32 of those in Base62, six characters.
func (f *Maker) GitHubToken(prefix string) string {
	random := f.Pick(Base62, 30)
	return prefix + random + base62Pad(crc32.ChecksumIEEE([]byte(random)), 6)
}

func base62Pad(v uint32, n int) string {
	b := make([]byte, n)
	for i := n - 1; i >= 0; i-- {
		b[i] = Base62[v%62]
		v /= 62
	}
	return string(b)
}

// GitHubFineGrained is a fine-grained personal access token.
func (f *Maker) GitHubFineGrained() string {
	return "github_pat_" + f.Pick(Base62, 22) + "_" + f.Pick(Base62, 59)
}

// GitLabToken is a personal access token.
func (f *Maker) GitLabToken() string { return "glpat-" + f.Pick(Base62+"_-", 20) }

// SlackBotToken is a bot token.
func (f *Maker) SlackBotToken() string {
	return "xoxb-" + f.Pick(Digits, 11) + "-" + f.Pick(Digits, 12) + "-" + f.Pick(Base62, 24)
}

// SlackUserToken is a user token.
func (f *Maker) SlackUserToken() string {
	return "xoxp-" + f.Pick(Digits, 11) + "-" + f.Pick(Digits, 11) + "-" + f.Pick(Digits, 12) + "-" + f.Pick(Lower+Digits, 32)
}

// GoogleAPIKey is a Google API key.
func (f *Maker) GoogleAPIKey() string { return "AIza" + f.Pick(Base62+"_-", 35) }

// StripeKey is a live secret key.
func (f *Maker) StripeKey() string { return "sk_live_" + f.Pick(Base62, 24) }

// GenericValue is 32 random base62 characters: a password, a token.
func (f *Maker) GenericValue() string { return f.Pick(Base62, 32) }

// JWT is a real HS256 token signed with a random key.
func (f *Maker) JWT() string {
	enc := base64.RawURLEncoding
	head := enc.EncodeToString([]byte(`{"alg":"HS256","typ":"JWT"}`))
	body := enc.EncodeToString([]byte(`{"sub":"` + f.Pick(Digits, 10) + `","name":"Test User","iat":1700000000}`))
	mac := hmac.New(sha256.New, []byte(f.Pick(Base62, 32)))
	_, _ = mac.Write([]byte(head + "." + body))
	return head + "." + body + "." + enc.EncodeToString(mac.Sum(nil))
}

// RSAKey, ECKey and pkcs8Key are real private keys, generated now.
func RSAKey(t testing.TB) string {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 1024) //nolint:gosec // a test fixture, never used
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(k)}))
}

// ECKey is a real P-256 private key, generated now.
func ECKey(t testing.TB) string {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}))
}

// Armoured wraps random bytes as a PEM-style block of the given type, the
// shape of OpenSSH and PGP private keys (whose bodies are not checked).
func (f *Maker) Armoured(typ string, n int, headers string) string {
	body := make([]byte, n)
	for i := range body {
		body[i] = byte(f.r.IntN(256))
	}
	s := base64.StdEncoding.EncodeToString(body)
	var b strings.Builder
	b.WriteString("-----BEGIN " + typ + "-----\n" + headers)
	for len(s) > 70 {
		b.WriteString(s[:70] + "\n")
		s = s[70:]
	}
	b.WriteString(s + "\n-----END " + typ + "-----\n")
	return b.String()
}
