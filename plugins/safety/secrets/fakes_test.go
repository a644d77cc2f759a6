package secrets

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

// Fakes of every kind, made at test time so that no credential-shaped
// string is committed: each has the format (and checksum, where the format
// has one) of the real thing, and grants nothing.

const (
	upper    = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
	lower    = "abcdefghijklmnopqrstuvwxyz"
	digits   = "0123456789"
	base62   = digits + upper + lower
	base32   = upper + "234567"
	b64chars = upper + lower + digits + "+/"
)

// fakes makes fake credentials from a fixed seed, so a failure can be
// replayed.
type fakes struct{ r *mrand.Rand }

func newFakes(seed uint64) *fakes {
	return &fakes{mrand.New(mrand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
}

func (f *fakes) pick(alphabet string, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = alphabet[f.r.IntN(len(alphabet))]
	}
	return string(b)
}

func (f *fakes) awsAccessKey() string { return "AKIA" + f.pick(base32, 16) }
func (f *fakes) awsSecretKey() string { return f.pick(b64chars, 40) }

// githubToken is a classic GitHub token: prefix, 30 random base62
// characters, then the CRC32 of those in base62, six characters.
func (f *fakes) githubToken(prefix string) string {
	random := f.pick(base62, 30)
	return prefix + random + base62Pad(crc32.ChecksumIEEE([]byte(random)), 6)
}

func base62Pad(v uint32, n int) string {
	b := make([]byte, n)
	for i := n - 1; i >= 0; i-- {
		b[i] = base62[v%62]
		v /= 62
	}
	return string(b)
}

func (f *fakes) githubFineGrained() string {
	return "github_pat_" + f.pick(base62, 22) + "_" + f.pick(base62, 59)
}
func (f *fakes) gitlabToken() string { return "glpat-" + f.pick(base62+"_-", 20) }
func (f *fakes) slackBotToken() string {
	return "xoxb-" + f.pick(digits, 11) + "-" + f.pick(digits, 12) + "-" + f.pick(base62, 24)
}
func (f *fakes) slackUserToken() string {
	return "xoxp-" + f.pick(digits, 11) + "-" + f.pick(digits, 11) + "-" + f.pick(digits, 12) + "-" + f.pick(lower+digits, 32)
}
func (f *fakes) googleAPIKey() string { return "AIza" + f.pick(base62+"_-", 35) }
func (f *fakes) stripeKey() string    { return "sk_live_" + f.pick(base62, 24) }
func (f *fakes) genericValue() string { return f.pick(base62, 32) }

// jwt is a real HS256 token signed with a random key.
func (f *fakes) jwt() string {
	enc := base64.RawURLEncoding
	head := enc.EncodeToString([]byte(`{"alg":"HS256","typ":"JWT"}`))
	body := enc.EncodeToString([]byte(`{"sub":"` + f.pick(digits, 10) + `","name":"Test User","iat":1700000000}`))
	mac := hmac.New(sha256.New, []byte(f.pick(base62, 32)))
	mac.Write([]byte(head + "." + body))
	return head + "." + body + "." + enc.EncodeToString(mac.Sum(nil))
}

// rsaKey, ecKey and pkcs8Key are real private keys, generated now.
func rsaKey(t testing.TB) string {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 1024) //nolint:gosec // a test fixture, never used
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(k)}))
}

func ecKey(t testing.TB) string {
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

// armoured wraps random bytes as a PEM-style block of the given type, the
// shape of OpenSSH and PGP private keys (whose bodies are not checked).
func (f *fakes) armoured(typ string, n int, headers string) string {
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
