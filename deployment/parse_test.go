package deployment

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/hcl/v2"

	"github.com/plugkit-go/plugkit/pipeline"
	"github.com/plugkit-go/plugkit/remote"
	"github.com/plugkit-go/plugkit/shared/wire"

	"github.com/plugkit-go/plugkit/authn"
	"github.com/plugkit-go/plugkit/internal/testkit/testcert"
)

// writeDeployment writes src as conf/deploy.hcl in a new folder, with the
// test binaries in conf/bin, and returns the file's path.
func writeDeployment(t *testing.T, src string) string {
	t.Helper()
	conf := filepath.Join(t.TempDir(), "conf")
	writeBinaries(t, conf)
	path := filepath.Join(conf, "deploy.hcl")
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// parseClean parses src and fails the test on any diagnostic.
func parseClean(t *testing.T, src string) *Deployment {
	t.Helper()
	d, diags := Parse(writeDeployment(t, src))
	if len(diags) > 0 {
		t.Fatalf("Parse:\n%s", Format(diags))
	}
	return d
}

// withoutSource drops what only diagnostics use, for comparisons.
func withoutSource(ps []Plugin) []Plugin {
	out := make([]Plugin, len(ps))
	for i, p := range ps {
		p.src, p.Range, p.ConfigRange = nil, hcl.Range{}, hcl.Range{}
		p.binaryOK, p.configOK = false, false
		out[i] = p
	}
	return out
}

func TestParseGood(t *testing.T) {
	t.Parallel()
	const src = `
host {
  admin_socket      = "run/host.sock"
  auto_mtls         = false
  max_message_bytes = 1048576
  log_level         = "debug"
  approval_timeout  = "2m"
  listener_timeout  = "1500ms"
  mcp               = "[::1]:8765"
  mcp_max_sessions  = 8
  mcp_idle_timeout  = "90s"
  policy {
    timeout     = false
    concurrency = 16
    per_tool    = 4
    retry {
      attempts = 5
    }
  }
}

plugin "index" {
  path     = "bin/ok"
  sha256   = "306C6CA7407560340797866E077E053627AD409277D1B9DA58106FCE4CF717CB"
  inject   = ["tools", "store"]
  critical = true
  watch    = true
  restart {
    attempts = 2
    window   = "30s"
  }
  tools {
    enabled  = ["search"]
    disabled = ["reindex"]
  }
  config {
    root = "corpus"
    rule "deny" { tool = "delete_*" }
  }
}

plugin "store" {
  path   = "bin/other"
  inject = []
}
`
	path := writeDeployment(t, src)
	d, diags := Parse(path)
	if len(diags) > 0 {
		t.Fatalf("Parse:\n%s", Format(diags))
	}
	conf := filepath.Dir(path)
	if d.File != path {
		t.Errorf("File = %q, want %q", d.File, path)
	}
	wantHost := Host{
		AdminSocket:         filepath.Join(conf, "run", "host.sock"),
		AutoMTLS:            false,
		MaxMessageBytes:     1 << 20,
		MaxResultBytes:      remote.DefaultMaxResultBytes,
		MaxArgumentBytes:    pipeline.DefaultMaxArgumentBytes,
		MaxDescriptionBytes: defaultMaxDescriptionBytes,
		LogLevel:            "debug",
		ApprovalTimeout:     2 * time.Minute,
		ListenerTimeout:     1500 * time.Millisecond,
		StartTimeout:        30 * time.Second,
		DrainTimeout:        5 * time.Second,
		ShutdownTimeout:     25 * time.Second,
		MCP:                 "[::1]:8765",
		MCPMaxSessions:      8,
		MCPIdleTimeout:      90 * time.Second,
		MCPMaxConnsPerPeer:  64,
		Policy: Policy{
			Timeout: false, Concurrency: 16, PerTool: 4,
			Retry: &Retry{Attempts: 5, Backoff: 50 * time.Millisecond, MaxBackoff: time.Second},
		},
	}
	if !reflect.DeepEqual(d.Host, wantHost) {
		t.Errorf("Host =\n%+v\nwant\n%+v", d.Host, wantHost)
	}
	wantPlugins := []Plugin{{
		Name:           "index",
		Path:           filepath.Join(conf, "bin", "ok"),
		Dir:            conf,
		SHA256:         "306c6ca7407560340797866e077e053627ad409277d1b9da58106fce4cf717cb",
		Inject:         []string{"tools", "store"},
		Critical:       true,
		Watch:          true,
		MaxResultBytes: remote.DefaultMaxResultBytes,
		Restart:        Restart{Attempts: 2, Window: 30 * time.Second, Backoff: 100 * time.Millisecond, MaxBackoff: 10 * time.Second},
		EnabledTools:   []string{"search"},
		DisabledTools:  []string{"reindex"},
		Config:         json.RawMessage(`{"root":"corpus","rule":[{"name":"deny","tool":"delete_*"}]}`),
	}, {
		Name:           "store",
		Path:           filepath.Join(conf, "bin", "other"),
		Dir:            conf,
		Inject:         []string{},
		Restart:        defaultRestart,
		Config:         json.RawMessage(`{}`),
		MaxResultBytes: remote.DefaultMaxResultBytes,
	}}
	if got := withoutSource(d.Plugins); !reflect.DeepEqual(got, wantPlugins) {
		t.Errorf("Plugins =\n%+v\nwant\n%+v", got, wantPlugins)
	}

	t.Run("ranges", func(t *testing.T) {
		idx := d.Plugins[0]
		if idx.Range.Filename != path || idx.Range.Start.Line != 22 {
			t.Errorf("Range = %s, want line 22 of the file", idx.Range)
		}
		if idx.ConfigRange.Start.Line != 36 {
			t.Errorf("ConfigRange = %s, want line 36", idx.ConfigRange)
		}
		if st := d.Plugins[1]; st.ConfigRange != st.Range {
			t.Errorf("without config block ConfigRange = %s, want the plugin block %s", st.ConfigRange, st.Range)
		}
	})
}

func TestParseDefaults(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		src  string
	}{
		{"no host block", `plugin "a" { path = "bin/ok" }`},
		{"empty host block", "host {}\nplugin \"a\" { path = \"bin/ok\" }"},
		{"empty policy block", "host {\n policy {}\n}\nplugin \"a\" { path = \"bin/ok\" }"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path := writeDeployment(t, tc.src)
			d, diags := Parse(path)
			if len(diags) > 0 {
				t.Fatalf("Parse:\n%s", Format(diags))
			}
			want := Host{
				AdminSocket:         filepath.Join(filepath.Dir(path), "plugkit.sock"),
				AutoMTLS:            true,
				MaxMessageBytes:     wire.DefaultMaxMessageBytes,
				MaxResultBytes:      remote.DefaultMaxResultBytes,
				MaxArgumentBytes:    pipeline.DefaultMaxArgumentBytes,
				MaxDescriptionBytes: defaultMaxDescriptionBytes,
				LogLevel:            "info",
				ApprovalTimeout:     60 * time.Second,
				ListenerTimeout:     30 * time.Second,
				StartTimeout:        30 * time.Second,
				DrainTimeout:        5 * time.Second,
				ShutdownTimeout:     25 * time.Second,
				MCPMaxSessions:      64,
				MCPIdleTimeout:      5 * time.Minute,
				MCPMaxConnsPerPeer:  64,
				Policy:              Policy{Timeout: true},
			}
			if !reflect.DeepEqual(d.Host, want) {
				t.Errorf("Host =\n%+v\nwant\n%+v", d.Host, want)
			}
			p := d.Plugins[0]
			if p.Inject != nil || p.EnabledTools != nil || p.DisabledTools != nil {
				t.Errorf("lists not written should be nil: inject %q enabled %q disabled %q", p.Inject, p.EnabledTools, p.DisabledTools)
			}
			if p.Restart != defaultRestart || string(p.Config) != "{}" || p.Critical || p.Watch || p.SHA256 != "" {
				t.Errorf("plugin defaults = %+v", p)
			}
		})
	}
}

func TestParseRelativePath(t *testing.T) {
	// Not parallel: t.Chdir.
	path := writeDeployment(t, `plugin "a" { path = "bin/ok" }`)
	t.Chdir(filepath.Dir(filepath.Dir(path)))
	d, diags := Parse(filepath.Join("conf", "deploy.hcl"))
	if len(diags) > 0 {
		t.Fatalf("Parse:\n%s", Format(diags))
	}
	if !filepath.IsAbs(d.Plugins[0].Path) || !strings.HasSuffix(d.Plugins[0].Path, filepath.Join("conf", "bin", "ok")) {
		t.Errorf("Path = %q, want the absolute path of conf/bin/ok", d.Plugins[0].Path)
	}

	// Messages show paths as the file was given, never absolute.
	if err := os.WriteFile(filepath.Join("conf", "bad.hcl"), []byte(`plugin "a" { path = "bin/nope" }`), 0o644); err != nil {
		t.Fatal(err)
	}
	_, diags = Parse(filepath.Join("conf", "bad.hcl"))
	want := "conf/bad.hcl:1:21: Plugin binary not found: conf/bin/nope does not exist.\n"
	if got := Format(diags); got != filepath.FromSlash(want) {
		t.Errorf("Format = %q, want %q", got, want)
	}
}

func TestParseUnreadable(t *testing.T) {
	t.Parallel()
	d, diags := Parse(filepath.Join(t.TempDir(), "none.hcl"))
	if d == nil || !diags.HasErrors() || !strings.Contains(Format(diags), "none.hcl: Cannot read deployment file:") {
		t.Errorf("Parse of a missing file = %v, %s", d, Format(diags))
	}
}

// The metrics address is checked as the MCP one is: loopback only.
func TestParseMetricsAddress(t *testing.T) {
	t.Parallel()
	d := parseClean(t, "host {\n  metrics = \"127.0.0.1:9464\"\n}\n")
	if d.Host.Metrics != "127.0.0.1:9464" {
		t.Errorf("metrics = %q", d.Host.Metrics)
	}
	_, diags := Parse(writeDeployment(t, "host {\n  metrics = \"0.0.0.0:9464\"\n}\n"))
	if out := Format(diags); !strings.Contains(out, "deploy.hcl:2:13: Invalid metrics address") || !strings.Contains(out, "/metrics has no authentication") {
		t.Errorf("diagnostics:\n%s", out)
	}
}

// The tracing block: an endpoint without a path gets OTLP's traces path;
// every mistake is reported at its place.
func TestParseTracing(t *testing.T) {
	t.Parallel()
	d := parseClean(t, "host {\n  tracing {\n    endpoint = \"http://127.0.0.1:4318\"\n    headers = { api-key = \"k\" }\n  }\n}\n")
	tr := d.Host.Tracing
	if tr == nil || tr.Endpoint != "http://127.0.0.1:4318/v1/traces" || tr.Sample != 1 || tr.Headers["api-key"] != "k" {
		t.Errorf("tracing = %+v", tr)
	}
	if d := parseClean(t, "host {}\n"); d.Host.Tracing != nil {
		t.Errorf("tracing without a block = %+v", d.Host.Tracing)
	}
	for _, c := range []struct{ body, want string }{
		{"tracing {\n  sample = 0.5\n}", "deploy.hcl:2:1: Missing tracing endpoint"},
		{"tracing {\n  endpoint = \"127.0.0.1:4318\"\n}", `deploy.hcl:3:14: Invalid tracing endpoint: endpoint "127.0.0.1:4318" is not an http or https URL`},
		{"tracing {\n  endpoint = \"http://c:4318\"\n  sample = 1.5\n}", "deploy.hcl:4:12: Invalid tracing sample: sample 1.5 is not a share from 0 to 1."},
		{"tracing {\n  endpoint = \"http://c:4318\"\n  sampel = 1\n}", `deploy.hcl:4:3: Unsupported argument: An argument named "sampel" is not allowed in the tracing block. Did you mean "sample"?`},
	} {
		_, diags := Parse(writeDeployment(t, "host {\n"+c.body+"\n}\n"))
		if out := Format(diags); !strings.Contains(out, c.want) {
			t.Errorf("%s:\ndiagnostics:\n%s\nwant %q", c.body, out, c.want)
		}
	}
}

// MCP on a non-loopback address only with TLS and authentication; the
// files those name are checked where they are named.
func TestParseMCPExposed(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cert, key, _ := testcert.Write(t, dir)
	keys := filepath.Join(dir, "keys.hcl")
	if _, err := authn.NewKey(keys, "ci", "agent", nil); err != nil {
		t.Fatal(err)
	}
	tlsBlock := fmt.Sprintf("  mcp_tls {\n    cert = %q\n    key  = %q\n  }\n", cert, key)
	authBlock := fmt.Sprintf("  mcp_auth {\n    keys = %q\n  }\n", keys)
	d := parseClean(t, "host {\n  mcp = \"0.0.0.0:8443\"\n"+tlsBlock+authBlock+"}\n")
	if d.Host.MCP != "0.0.0.0:8443" || d.Host.MCPTLS == nil || d.Host.MCPAuth == nil || d.Host.MCPAuth.Keys != keys {
		t.Errorf("host = %+v", d.Host)
	}
	for _, c := range []struct{ body, want string }{
		{"  mcp = \"0.0.0.0:8443\"\n", "Invalid mcp address: mcp \"0.0.0.0:8443\" is not on a loopback address (127.0.0.1, ::1 or localhost): MCP may be reachable from other machines only over TLS and with authentication (mcp_tls and mcp_auth blocks)."},
		{"  mcp = \"0.0.0.0:8443\"\n" + tlsBlock, "Invalid mcp address"},
		{"  mcp = \"0.0.0.0:8443\"\n" + authBlock, "Invalid mcp address"},
		{"  mcp_tls {\n    cert = \"nope.pem\"\n    key = \"nope.key\"\n  }\n", "Invalid mcp_tls files: cert \"nope.pem\" and key \"nope.key\": open"},
		{"  mcp_auth {\n    keys = \"missing.hcl\"\n  }\n", "Missing keys file: keys file"},
		{"  mcp_auth {}\n", "Incomplete mcp_auth block"},
	} {
		_, diags := Parse(writeDeployment(t, "host {\n"+c.body+"}\n"))
		if out := Format(diags); !strings.Contains(out, c.want) {
			t.Errorf("%s\ndiagnostics:\n%s\nwant %q", c.body, out, c.want)
		}
	}
}

func TestParsePerPrincipal(t *testing.T) {
	t.Parallel()
	d := parseClean(t, "host {\n  policy {\n    per_principal {\n      rate = 2.5\n      concurrency = 3\n    }\n  }\n}\n")
	if pp := d.Host.Policy.PerPrincipal; pp == nil || pp.Rate != 2.5 || pp.Burst != 0 || pp.Concurrency != 3 {
		t.Errorf("per_principal = %+v", pp)
	}
	_, diags := Parse(writeDeployment(t, "host {\n  policy {\n    per_principal {\n      rate = -1\n      concurrency = -2\n    }\n  }\n}\n"))
	out := Format(diags)
	for _, want := range []string{"deploy.hcl:4:14: Invalid rate", "deploy.hcl:5:21: Invalid concurrency"} {
		if !strings.Contains(out, want) {
			t.Errorf("diagnostics:\n%s\nwant %q", out, want)
		}
	}
}

// TestParsePerPrincipalStore: lease_ttl defaults to 30s with a store and
// is 0 without one; one too short, not a duration or without a store is an
// error naming the file and line, as are a bad store and on_store_error.
func TestParsePerPrincipalStore(t *testing.T) {
	t.Parallel()
	block := func(lines string) string {
		return "host {\n  policy {\n    per_principal {\n      concurrency = 2\n" + lines + "    }\n  }\n}\n"
	}
	const store = "      store = \"redis://127.0.0.1:6379/0\"\n"
	for _, c := range []struct {
		lines string
		ttl   time.Duration
		on    string
	}{
		{"", 0, "deny"},
		{store, 30 * time.Second, "deny"},
		{store + "      lease_ttl = \"45s\"\n      on_store_error = \"local\"\n", 45 * time.Second, "local"},
	} {
		pp := parseClean(t, block(c.lines)).Host.Policy.PerPrincipal
		if pp == nil || pp.LeaseTTL != c.ttl || pp.OnStoreError != c.on || pp.Concurrency != 2 {
			t.Errorf("%q: per_principal = %+v", c.lines, pp)
		}
	}
	for _, c := range []struct{ lines, want string }{
		{"      lease_ttl = \"45s\"\n", "deploy.hcl:5:19: lease_ttl without a store"},
		{store + "      lease_ttl = \"500ms\"\n", "deploy.hcl:6:19: Invalid lease_ttl: lease_ttl = \"500ms\" is less than 1s"},
		{store + "      lease_ttl = \"soon\"\n", "deploy.hcl:6:19: Invalid duration"},
		{store + "      lease_ttl = \"0s\"\n", "deploy.hcl:6:19: Invalid duration"},
		{"      store = \"http://redis:6379\"\n", "deploy.hcl:5:15: Invalid store"},
		{store + "      on_store_error = \"allow\"\n", "deploy.hcl:6:24: Invalid on_store_error"},
	} {
		_, diags := Parse(writeDeployment(t, block(c.lines)))
		if out := Format(diags); !strings.Contains(out, c.want) {
			t.Errorf("%q\ndiagnostics:\n%s\nwant %q", c.lines, out, c.want)
		}
	}
}

// TestParseMaxConnsPerPeer: mcp_max_conns_per_peer is read beside the
// other MCP bounds.
func TestParseMaxConnsPerPeer(t *testing.T) {
	path := writeDeployment(t, `
host {
  mcp                    = "127.0.0.1:8765"
  mcp_max_conns_per_peer = 5
}

plugin "a" {
  path = "bin/ok"
}
`)
	d, diags := Parse(path)
	if diags.HasErrors() {
		t.Fatalf("Parse:\n%s", Format(diags))
	}
	if d.Host.MCPMaxConnsPerPeer != 5 {
		t.Errorf("MCPMaxConnsPerPeer = %d, want 5", d.Host.MCPMaxConnsPerPeer)
	}
}

// TestParseMaxArgumentBytes: the host block's bound, a plugin's own, and
// a plugin that says nothing keeping the host's (0 in its Spec).
func TestParseMaxArgumentBytes(t *testing.T) {
	path := writeDeployment(t, `
host {
  max_argument_bytes = 1048576
}

plugin "a" {
  path               = "bin/ok"
  max_argument_bytes = 33554432
}

plugin "b" {
  path = "bin/ok"
}
`)
	d, diags := Parse(path)
	if diags.HasErrors() {
		t.Fatalf("Parse:\n%s", Format(diags))
	}
	if d.Host.MaxArgumentBytes != 1<<20 {
		t.Errorf("host MaxArgumentBytes = %d, want %d", d.Host.MaxArgumentBytes, 1<<20)
	}
	got := map[string]int{}
	for _, p := range d.Plugins {
		got[p.Name] = p.MaxArgumentBytes
	}
	if got["a"] != 32<<20 || got["b"] != 0 {
		t.Errorf("plugins' MaxArgumentBytes = %v, want a: %d, b: 0 (the host's)", got, 32<<20)
	}
	bad := writeDeployment(t, `
host {
  max_argument_bytes = 0
}
`)
	if _, diags := Parse(bad); !diags.HasErrors() || !strings.Contains(Format(diags), "max_argument_bytes must be at least 1") {
		t.Errorf("max_argument_bytes = 0: %s, want it refused", Format(diags))
	}
}

// TestParseMCPAllowedOrigins: origins are kept normalised; one that is not
// an http(s) origin is refused, named.
func TestParseMCPAllowedOrigins(t *testing.T) {
	d, diags := Parse(writeDeployment(t, `
host {
  mcp_allowed_origins = ["https://App.Example", "http://localhost:3000/"]
}
`))
	if diags.HasErrors() {
		t.Fatalf("Parse:\n%s", Format(diags))
	}
	if want := []string{"https://app.example", "http://localhost:3000"}; !slices.Equal(d.Host.MCPAllowedOrigins, want) {
		t.Errorf("MCPAllowedOrigins = %q, want %q", d.Host.MCPAllowedOrigins, want)
	}
	_, diags = Parse(writeDeployment(t, `
host {
  mcp_allowed_origins = ["https://app.example/path"]
}
`))
	if !diags.HasErrors() || !strings.Contains(Format(diags), `"https://app.example/path" is not an origin`) {
		t.Errorf("an origin with a path: %s, want it refused", Format(diags))
	}
}
