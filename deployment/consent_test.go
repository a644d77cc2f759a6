package deployment

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/plugkit-go/plugkit/tokenexchange"
)

const consentBlock = `      user_consent {
        scope         = "issues:read"
        client_id     = "plugkit"
        client_secret = "s3cret"
      }`

// consentHost is a host block with a user_consent block whose key file
// has mode perm.
func consentHost(t *testing.T, perm os.FileMode, extra string) string {
	t.Helper()
	key := filepath.Join(t.TempDir(), "vault.key")
	if err := os.WriteFile(key, []byte(strings.Repeat("ab", 32)+"\n"), perm); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(key, perm); err != nil {
		t.Fatal(err)
	}
	return `host {
  user_consent {
    listen   = "127.0.0.1:8445"
    key_file = "` + key + `"
` + extra + `
  }
}
`
}

func TestParseUserConsent(t *testing.T) {
	t.Parallel()
	d := parseClean(t, consentHost(t, 0o600, `    vault = "tokens.vault"`)+bridgePlugin("https://upstream.example/mcp", consentBlock))
	u := d.Plugins[0].Upstream
	want := &tokenexchange.Upstream{Plugin: "gh", URL: "https://upstream.example/mcp", Mode: tokenexchange.UserConsent,
		Scope: "issues:read", ClientID: "plugkit", ClientSecret: "s3cret"}
	if u == nil || *u != *want {
		t.Fatalf("Upstream = %+v; want %+v", u, want)
	}
	c := d.Host.UserConsent
	if c == nil || c.Listen != "127.0.0.1:8445" || c.URL != "http://127.0.0.1:8445" || !filepath.IsAbs(c.Vault) || filepath.Base(c.Vault) != "tokens.vault" || c.Wait != defaultConsentWait {
		t.Fatalf("UserConsent = %+v", c)
	}
	if cfg := d.Plugins[0].PluginConfig(); strings.Contains(string(cfg), "s3cret") || !strings.Contains(string(cfg), "user_consent") {
		t.Errorf("the plugin's config %s holds the client secret, or lost its auth block", cfg)
	}
	d = parseClean(t, consentHost(t, 0o600, `    vault = "tokens.vault"
    wait  = "90s"`)+bridgePlugin("https://upstream.example/mcp", consentBlock))
	if c := d.Host.UserConsent; c == nil || c.Wait.String() != "1m30s" {
		t.Fatalf("UserConsent with wait = \"90s\": %+v", c)
	}
	// Behind a TLS proxy: any listen address, an https url; Redis instead
	// of a file.
	d = parseClean(t, strings.Replace(consentHost(t, 0o400, `    url = "https://gw.example/"
    store = "redis://127.0.0.1:6379/0"`), "127.0.0.1:8445", "0.0.0.0:8445", 1)+bridgePlugin("https://upstream.example/mcp", consentBlock))
	if c := d.Host.UserConsent; c == nil || c.URL != "https://gw.example" || c.Store == "" || c.Vault != "" || c.Wait != defaultConsentWait {
		t.Fatalf("UserConsent = %+v", c)
	}
}

func TestParseUserConsentRefused(t *testing.T) {
	t.Parallel()
	good := consentHost(t, 0o600, `    vault = "tokens.vault"`)
	for _, c := range []struct{ src, want string }{
		{bridgePlugin("https://upstream.example/mcp", consentBlock), `user_consent without a callback: Plugin "gh" asks each user's consent`},
		{good + bridgePlugin("http://upstream.example/mcp", consentBlock), `Upstream without TLS: Plugin "gh": url "http://upstream.example/mcp"`},
		{good + bridgePlugin("https://upstream.example/mcp", consentBlock+"\n      static {}"), "an auth block holds exactly one of static, token_exchange, client_credentials or user_consent; it has 2"},
		{good + bridgePlugin("https://upstream.example/mcp", strings.Replace(consentBlock, `client_id     = "plugkit"`, "", 1)), "client_secret without client_id"},
		{consentHost(t, 0o644, `    vault = "v"`), "Invalid user_consent key_file"},
		{consentHost(t, 0o600, ""), "user_consent needs vault"},
		{consentHost(t, 0o600, `    vault = "v"
    wait  = "soon"`), `wait = "soon" is not a duration`},
		{consentHost(t, 0o600, `    vault = "v"
    wait  = "0s"`), "wait must be greater than zero"},
		{consentHost(t, 0o600, `    vault = "v"
    store = "redis://127.0.0.1:6379"`), "Two token stores"},
		{strings.Replace(good, "127.0.0.1:8445", "0.0.0.0:8445", 1), "Invalid user_consent listen"},
		{consentHost(t, 0o600, `    vault = "v"
    url = "http://gw.example"`), "Invalid user_consent url"},
		{consentHost(t, 0o600, `    vault = "v"
    url = "https://gw.example/cb"`), "Invalid user_consent url"},
		{`host {
  user_consent {
    listen = "127.0.0.1:8445"
    vault  = "v"
  }
}
`, "user_consent needs key_file"},
	} {
		_, diags := Parse(writeDeployment(t, c.src))
		if out := Format(diags); !strings.Contains(out, c.want) {
			t.Errorf("diagnostics:\n%s\nwant %q", out, c.want)
		}
	}
}

// TestParseUserConsentVaultOutOfSandboxes: a sandbox whose paths hold the
// vault's key file or its vault is refused.
func TestParseUserConsentVaultOutOfSandboxes(t *testing.T) {
	t.Parallel()
	vaultDir := t.TempDir()
	host := consentHost(t, 0o600, `    vault = "`+filepath.Join(vaultDir, "tokens.vault")+`"`)
	keyDir := host[strings.Index(host, `key_file = "`)+len(`key_file = "`):]
	keyDir = filepath.Dir(keyDir[:strings.Index(keyDir, `"`)])
	for _, c := range []struct{ read, want string }{
		{keyDir, "key_file"},
		{vaultDir, "vault"},
	} {
		src := host + `plugin "gh" {
  path = "bin/ok"
  sandbox {
    read = ["` + c.read + `"]
  }
}
`
		_, diags := Parse(writeDeployment(t, src))
		if out := Format(diags); !strings.Contains(out, "Sandbox reaches the token vault") || !strings.Contains(out, "user_consent's "+c.want) {
			t.Errorf("read %s:\n%s\nwant the sandbox refused for the %s", c.read, out, c.want)
		}
	}
	// A neighbour of the vault's folder is fine.
	parseClean(t, host+`plugin "gh" {
  path = "bin/ok"
  sandbox {
    read = ["`+t.TempDir()+`"]
  }
}
`)
}
