package server

import (
	"os"
	"testing"

	"github.com/plugkit-go/plugkit/internal/testkit/testcert"
)

// TestCertificateReload: a reload serves the new pair; a pair that does not
// load leaves the one in use.
func TestCertificateReload(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile, _ := testcert.Write(t, dir)
	c, err := newCertificate(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	first, _ := c.get(nil)

	next := t.TempDir()
	newCert, newKey, _ := testcert.Write(t, next)
	for _, p := range [][2]string{{newCert, certFile}, {newKey, keyFile}} {
		b, _ := os.ReadFile(p[0])
		if err := os.WriteFile(p[1], b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.load(); err != nil {
		t.Fatal(err)
	}
	second, _ := c.get(nil)
	if string(second.Certificate[0]) == string(first.Certificate[0]) {
		t.Fatal("the reload still serves the first certificate")
	}

	if err := os.WriteFile(keyFile, []byte("not a key"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := c.load(); err == nil {
		t.Error("a broken key loaded")
	}
	if kept, _ := c.get(nil); string(kept.Certificate[0]) != string(second.Certificate[0]) {
		t.Error("a failed reload replaced the certificate in use")
	}
}
