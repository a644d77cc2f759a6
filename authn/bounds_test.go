package authn_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/golang-jwt/jwt/v5"

	"github.com/plugkit-go/plugkit/authn"
	"github.com/plugkit-go/plugkit/internal/testkit/testissuer"
)

// TestKeysFileBounded: a keys file nested past the limit (the attack's
// 200,000 brackets crashed the parser; TestAttackHostileKeysFile in
// cmd/host runs it through the binary) or larger than 1 MiB is refused
// with a diagnostic naming the file, before it is parsed.
func TestKeysFileBounded(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct{ name, src, want string }{
		{"nested brackets", "key \"a\" {\n  attributes = " + strings.Repeat("[", 20000) + strings.Repeat("]", 20000) + "\n}\n", "keys.hcl:2,"},
		{"chained splats", "key \"a\" {\n  sha256 = x" + strings.Repeat("[*]", 20000) + "\n}\n", "Nesting too deep"},
		{"too large", "# " + strings.Repeat("x", 1<<20) + "\n", "Keys file too large"},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(dir, "keys.hcl")
			if err := os.WriteFile(path, []byte(c.src), 0o600); err != nil {
				t.Fatal(err)
			}
			_, diags := authn.LoadKeys(path)
			if !diags.HasErrors() || !strings.Contains(diags.Error(), c.want) {
				t.Fatalf("diagnostics %v, want %q", diags, c.want)
			}
		})
	}
}

// TestMalformedGroupsClaim: a groups claim that is present but is not a
// group name or a list of them refuses the token (401, counted as
// invalid); it is never read as "no groups", which would slip past a rule
// about a group. An absent claim is no groups.
func TestMalformedGroupsClaim(t *testing.T) {
	iss := testissuer.Start(t)
	const audience = "https://tools.example/mcp"
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a, err := authn.New(ctx, authn.Config{OAuth: &authn.OAuthConfig{Issuer: iss.URL, JWKSURL: iss.JWKSURL, Audience: audience, GroupsClaim: "roles"}})
	if err != nil {
		t.Fatal(err)
	}
	var refused []string
	a.OnRefused = func(reason string) { refused = append(refused, reason) }
	srv := httptest.NewServer(a.Require(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})))
	defer srv.Close()
	for _, c := range []struct {
		name  string
		roles any
		code  int
		want  string
	}{
		{"absent", nil, 200, ""},
		{"a string", "readers", 200, ""},
		{"a list", []string{"readers", "writers"}, 200, ""},
		{"an object", map[string]any{"readers": true}, 401, `the "roles" claim is an object`},
		{"a list with a number", []any{"readers", 3}, 401, `the "roles" claim's item 1 is a number`},
		{"a list with an object", []any{map[string]string{"name": "readers"}}, 401, `item 0 is an object`},
		{"a number", 3, 401, "is a number"},
		{"a boolean", true, 401, "is a boolean"},
		{"an empty string", "", 401, "is an empty string"},
		{"null", "null", 401, "is null"},
	} {
		t.Run(c.name, func(t *testing.T) {
			claims := jwt.MapClaims{"sub": "mallory", "aud": audience}
			switch {
			case c.roles == "null":
				claims["roles"] = nil
			case c.roles != nil:
				claims["roles"] = c.roles
			}
			req, _ := http.NewRequest("POST", srv.URL+"/mcp", nil)
			req.Header.Set("Authorization", "Bearer "+iss.Token(t, claims))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != c.code || !strings.Contains(string(body), c.want) {
				t.Fatalf("%d %q, want %d with %q", resp.StatusCode, body, c.code, c.want)
			}
		})
	}
	if len(refused) != 7 || refused[0] != "invalid" {
		t.Errorf("refusals counted: %v, want 7 invalid", refused)
	}
}

// TestJWKSAnswerBounded: an issuer whose keys URL answers more than
// MaxJWKSBytes (here a valid key set after blanks past the limit) is not read
// past the limit: its keys are not taken, and its tokens are refused.
func TestJWKSAnswerBounded(t *testing.T) {
	for _, c := range []struct {
		name    string
		padding int
		code    int
	}{
		{"under the limit", 1000, 200},
		{"over the limit", authn.MaxJWKSBytes + 1, 401},
	} {
		t.Run(c.name, func(t *testing.T) {
			key := testissuer.NewKey(t)
			jwks, _ := json.Marshal(map[string]any{"keys": []map[string]string{{
				"kty": "RSA", "kid": "k1", "use": "sig", "alg": "RS256",
				"n": base64.RawURLEncoding.EncodeToString(key.N.Bytes()),
				"e": base64.RawURLEncoding.EncodeToString(big.NewInt(int64(key.E)).Bytes()),
			}}})
			// Padding first: a decoder stops reading after the set.
			answer := append([]byte(strings.Repeat(" ", c.padding)), jwks...)
			issuer := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				// Chunked, so no Content-Length warns the client.
				w.(http.Flusher).Flush()
				_, _ = w.Write(answer)
			}))
			defer issuer.Close()
			iss := &testissuer.Issuer{URL: issuer.URL, JWKSURL: issuer.URL + "/jwks.json", Key: key, KID: "k1"}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			a, err := authn.New(ctx, authn.Config{OAuth: &authn.OAuthConfig{Issuer: iss.URL, JWKSURL: iss.JWKSURL, Audience: "https://tools.example/mcp"}})
			if err != nil {
				t.Fatal(err)
			}
			srv := httptest.NewServer(a.Require(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})))
			defer srv.Close()
			req, _ := http.NewRequest("POST", srv.URL+"/mcp", nil)
			req.Header.Set("Authorization", "Bearer "+iss.Token(t, jwt.MapClaims{"sub": "alice", "aud": "https://tools.example/mcp"}))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != c.code {
				t.Fatalf("%d, want %d", resp.StatusCode, c.code)
			}
		})
	}
}
