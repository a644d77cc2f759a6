package authn_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/modelcontextprotocol/go-sdk/auth"

	"github.com/plugkit-go/plugkit/authn"
	"github.com/plugkit-go/plugkit/internal/testkit/testissuer"
	"github.com/plugkit-go/plugkit/shared/identity"
)

// TestKeysRoundTrip: a key made with NewKey is found by Lookup under its
// name, kind and attributes; the file holds its hash and never the key.
func TestKeysRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "keys.hcl")
	reader, err := authn.NewKey(path, "ci-bot", "", []string{"group:readers"})
	if err != nil {
		t.Fatal(err)
	}
	writer, err := authn.NewKey(path, "ann", "user", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := authn.NewKey(path, "ann", "user", nil); err == nil || !strings.Contains(err.Error(), `already has a key named "ann"`) {
		t.Errorf("a second key named ann: %v", err)
	}
	text, _ := os.ReadFile(path)
	if strings.Contains(string(text), reader) || strings.Contains(string(text), writer) {
		t.Fatalf("the keys file holds a key:\n%s", text)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Errorf("keys file mode %v, want 0600", fi.Mode().Perm())
	}
	keys, diags := authn.LoadKeys(path)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	for _, c := range []struct {
		key  string
		want string
		ok   bool
	}{{reader, "agent:ci-bot", true}, {writer, "user:ann", true}, {reader + "x", "", false}, {"", "", false}} {
		p, ok := keys.Lookup(c.key)
		if ok != c.ok || (ok && p.String() != c.want) {
			t.Errorf("Lookup: %v %v, want %s %v", p, ok, c.want, c.ok)
		}
	}
	if p, _ := keys.Lookup(reader); !p.Matches("group:readers") {
		t.Errorf("ci-bot's attributes: %v", p.Attributes)
	}
}

// TestKeysFileErrors: every bad entry is reported at its place.
func TestKeysFileErrors(t *testing.T) {
	path := filepath.Join(t.TempDir(), "keys.hcl")
	os.WriteFile(path, []byte(`key "ok" {
  sha256 = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
}
key "short" {
  sha256 = "9f86"
}
key "odd" {
  sha256 = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
  kind   = "robot"
}
key "bad attr" {
  sha256     = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
  attributes = ["readers"]
}
`), 0o600)
	_, diags := authn.LoadKeys(path)
	var lines []string
	for _, d := range diags {
		lines = append(lines, d.Error())
	}
	out := strings.Join(lines, "\n")
	if len(diags) != 3 {
		t.Errorf("%d diagnostics, want 3:\n%s", len(diags), out)
	}
	for _, want := range []string{"keys.hcl:4,1-12: Invalid key hash", `keys.hcl:7,1-10: Invalid key kind; key "odd": kind "robot"`, `keys.hcl:11,1-15: Invalid key name`} {
		if !strings.Contains(out, want) {
			t.Errorf("diagnostics %s\nwant %q", out, want)
		}
	}
}

// TestRequire: a request without a valid key is answered 401, saying how
// to authenticate, and never reaches the handler; one with a key reaches it
// with its principal.
func TestRequire(t *testing.T) {
	path := filepath.Join(t.TempDir(), "keys.hcl")
	key, err := authn.NewKey(path, "ci-bot", "agent", nil)
	if err != nil {
		t.Fatal(err)
	}
	keys, _ := authn.LoadKeys(path)
	a, err := authn.New(context.Background(), authn.Config{Keys: keys})
	if err != nil {
		t.Fatal(err)
	}
	refused := map[string]int{}
	a.OnRefused = func(reason string) { refused[reason]++ }
	var seen []identity.Principal
	srv := httptest.NewServer(a.Require(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, _ := authn.PrincipalOf(auth.TokenInfoFromContext(r.Context()))
		seen = append(seen, p)
	})))
	defer srv.Close()
	for _, c := range []struct {
		header string
		code   int
	}{{"", 401}, {"Bearer " + key + "x", 401}, {"Bearer eyJhbGciOiJub25lIn0.e30.", 401}, {"Basic " + key, 401}, {"Bearer " + key, 200}} {
		req, _ := http.NewRequest("GET", srv.URL, nil)
		if c.header != "" {
			req.Header.Set("Authorization", c.header)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.code {
			t.Errorf("Authorization %q: %d, want %d", c.header, resp.StatusCode, c.code)
		}
	}
	if len(seen) != 1 || seen[0].String() != "agent:ci-bot" {
		t.Errorf("the handler saw %v", seen)
	}
	if refused["missing"] != 2 || refused["invalid"] != 2 {
		t.Errorf("refusals counted %v, want 2 missing (none, basic) and 2 invalid", refused)
	}
	// A reload replaces the keys: the old key no longer opens anything.
	empty := filepath.Join(t.TempDir(), "none.hcl")
	os.WriteFile(empty, nil, 0o600)
	none, _ := authn.LoadKeys(empty)
	a.SetKeys(none)
	if _, err := a.Verify(context.Background(), key, nil); !errors.Is(err, auth.ErrInvalidToken) {
		t.Errorf("a removed key: %v", err)
	}
}

// TestOAuthTokens: an issuer's token is checked for its signature, iss,
// aud, exp and scopes; its sub is the principal, its scopes and groups the
// attributes. Whatever is wrong, the request never reaches the handler.
func TestOAuthTokens(t *testing.T) {
	iss := testissuer.Start(t)
	const audience = "https://tools.example/mcp"
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a, err := authn.New(ctx, authn.Config{OAuth: &authn.OAuthConfig{Issuer: iss.URL, JWKSURL: iss.JWKSURL, Audience: audience, Scopes: []string{"tools"}}})
	if err != nil {
		t.Fatal(err)
	}
	var seen []identity.Principal
	srv := httptest.NewServer(a.Require(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, _ := authn.PrincipalOf(auth.TokenInfoFromContext(r.Context()))
		seen = append(seen, p)
	})))
	defer srv.Close()
	ok := jwt.MapClaims{"sub": "alice", "aud": audience, "scope": "tools files.read", "groups": []string{"readers"}}
	with := func(change jwt.MapClaims) jwt.MapClaims {
		c := jwt.MapClaims{}
		for k, v := range ok {
			c[k] = v
		}
		for k, v := range change {
			if v == nil {
				delete(c, k)
			} else {
				c[k] = v
			}
		}
		return c
	}
	for _, c := range []struct {
		name  string
		token string
		code  int
	}{
		{"a good token", iss.Token(t, ok), 200},
		{"no token", "", 401},
		{"expired", iss.Token(t, with(jwt.MapClaims{"exp": time.Now().Add(-time.Hour).Unix()})), 401},
		{"not yet valid", iss.Token(t, with(jwt.MapClaims{"nbf": time.Now().Add(time.Hour).Unix()})), 401},
		{"for another audience", iss.Token(t, with(jwt.MapClaims{"aud": "https://other.example/mcp"})), 401},
		{"from another issuer", iss.Token(t, with(jwt.MapClaims{"iss": "https://evil.example"})), 401},
		{"signed by another key", iss.TokenSignedBy(t, testissuer.NewKey(t), ok), 401},
		{"no subject", iss.Token(t, with(jwt.MapClaims{"sub": nil})), 401},
		{"without the required scope", iss.Token(t, with(jwt.MapClaims{"scope": "files.read"})), 403},
	} {
		req, _ := http.NewRequest("POST", srv.URL+"/mcp", nil)
		if c.token != "" {
			req.Header.Set("Authorization", "Bearer "+c.token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.code {
			t.Errorf("%s: %d, want %d", c.name, resp.StatusCode, c.code)
		}
		if c.code == 401 && !strings.Contains(resp.Header.Get("WWW-Authenticate"), `resource_metadata="https://tools.example/.well-known/oauth-protected-resource/mcp"`) {
			t.Errorf("%s: WWW-Authenticate %q does not point at the metadata", c.name, resp.Header.Get("WWW-Authenticate"))
		}
	}
	if len(seen) != 1 || seen[0].String() != "user:alice" || !seen[0].Matches("group:readers") || !seen[0].Matches("scope:files.read") {
		t.Errorf("the handler saw %+v", seen)
	}

	resp, err := http.Get(srv.URL + authn.MetadataPath + "/mcp")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var meta struct {
		Resource             string   `json:"resource"`
		AuthorizationServers []string `json:"authorization_servers"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&meta); err != nil || meta.Resource != audience || len(meta.AuthorizationServers) != 1 || meta.AuthorizationServers[0] != iss.URL {
		t.Errorf("metadata: %v %+v", err, meta)
	}
}
