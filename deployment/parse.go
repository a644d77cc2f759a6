package deployment

import (
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/gohcl"
	"github.com/hashicorp/hcl/v2/hclsyntax"

	"github.com/plugkit-go/plugkit/authn"
	"github.com/plugkit-go/plugkit/internal/hclbound"
	"github.com/plugkit-go/plugkit/remote"
	"github.com/plugkit-go/plugkit/shared/wire"
)

// Parse reads the deployment file at path and checks what can be checked
// from the file alone: syntax, names, types, durations, duplicate plugins,
// the host settings, each plugin's binary (it exists, it is executable, it
// matches its sha256) and tools lists.
//
// It returns every problem, sorted by position; diagnostics name the file
// as path is written. A syntax error stops there, since what follows it
// cannot be read reliably. With errors the Deployment is incomplete: report
// them and start nothing.
func Parse(path string) (*Deployment, hcl.Diagnostics) {
	p := &parser{dir: filepath.Dir(path), valueNames: map[int]string{}, undecoded: map[int]bool{}}
	d := &Deployment{File: path}
	src, diags := readChecked(path)
	if diags.HasErrors() {
		return d, diags
	}
	file, diags := hclsyntax.ParseConfig(src, path, hcl.InitialPos)
	if diags.HasErrors() {
		return d, sortDiags(diags)
	}
	p.diags = diags

	var syn fileSyntax
	decoded := gohcl.DecodeBody(file.Body, nil, &syn)
	for _, diag := range decoded {
		if diag.Subject != nil {
			p.undecoded[diag.Subject.Start.Byte] = true
		}
	}
	p.names(file.Body, &syn, "the top level of the file")
	d.Host = p.host(syn.Host)
	d.Plugins = p.plugins(syn.Plugins)
	p.checkUpstreams(d)
	// After the walks above, which record the attribute names retype uses.
	p.diags = append(p.diags, retype(decoded, p.valueNames)...)
	return d, sortDiags(p.diags)
}

// parser gathers the diagnostics of one Parse.
type parser struct {
	// dir is the deployment file's folder: paths are relative to it.
	dir   string
	diags hcl.Diagnostics
	// valueNames maps where an attribute's value starts to its name.
	valueNames map[int]string
	// undecoded holds where the values gohcl could not decode start.
	undecoded map[int]bool
	// defaultSandbox is the host block's sandbox.
	defaultSandbox *Sandbox
	// maxResult is the host block's max_result_bytes.
	maxResult int
}

// decoded reports whether body's attribute name was written and decoded: a
// value gohcl could not convert (2.5 for a whole number) may be left partly
// filled in, and is already reported.
func (p *parser) decoded(body hcl.Body, name string) bool {
	a := attribute(body, name)
	return a != nil && !p.undecoded[a.Expr.StartRange().Start.Byte]
}

func (p *parser) errorf(subject hcl.Range, summary, format string, args ...any) {
	p.diags = append(p.diags, errorAt(subject, summary, format, args...))
}

func (p *parser) names(body hcl.Body, schemaOf any, where string) {
	p.diags = append(p.diags, checkNames(body, schemaOf, where, p.valueNames)...)
}

// resolve makes a path written in the file absolute (for the Deployment)
// and shows it relative to the working directory, as the file was given
// (for messages).
func (p *parser) resolve(written string) (abs, shown string) {
	shown = written
	if !filepath.IsAbs(written) {
		shown = filepath.Join(p.dir, written)
	}
	abs, err := filepath.Abs(shown)
	if err != nil {
		abs = shown
	}
	return abs, shown
}

func (p *parser) host(hs *hostSyntax) Host {
	h := Host{
		AutoMTLS:        true,
		MaxMessageBytes: wire.DefaultMaxMessageBytes,
		MaxResultBytes:  remote.DefaultMaxResultBytes,
		LogLevel:        defaultLogLevel,
		ApprovalTimeout: defaultApprovalTimeout,
		ListenerTimeout: defaultListenerTimeout,
		StartTimeout:    defaultStartTimeout,
		DrainTimeout:    defaultDrainTimeout,
		ShutdownTimeout: defaultShutdownTimeout,
		MCPMaxSessions:  defaultMCPMaxSessions,
		MCPIdleTimeout:  defaultMCPIdleTimeout,
		Policy:          Policy{Timeout: true},
	}
	h.AdminSocket, _ = p.resolve(defaultAdminSocket)
	p.maxResult = h.MaxResultBytes
	if hs == nil {
		return h
	}
	p.names(hs.Body, hs, "the host block")
	h.Sandbox = p.sandbox(hs.Sandbox)
	p.defaultSandbox = h.Sandbox
	body, def := hs.Body, hs.DefRange
	if hs.AdminSocket != nil {
		if *hs.AdminSocket == "" {
			p.errorf(valueRange(body, "admin_socket", def), "Invalid admin_socket", "admin_socket must not be empty; leave it out for %q beside this file.", defaultAdminSocket)
		} else {
			h.AdminSocket, _ = p.resolve(*hs.AdminSocket)
		}
	}
	if hs.AutoMTLS != nil {
		h.AutoMTLS = *hs.AutoMTLS
	}
	if hs.Receipts != nil {
		h.Receipts = *hs.Receipts
	}
	if hs.MaxMessageBytes != nil && p.decoded(body, "max_message_bytes") {
		if err := wire.ValidateMaxMessageBytes(*hs.MaxMessageBytes); err != nil {
			p.errorf(valueRange(body, "max_message_bytes", def), "Invalid max_message_bytes", "%s.", upperFirst(err.Error()))
		} else {
			h.MaxMessageBytes = *hs.MaxMessageBytes
		}
	}
	h.MaxResultBytes = p.count(body, "max_result_bytes", hs.MaxResultBytes, 1, h.MaxResultBytes)
	p.maxResult = h.MaxResultBytes
	if hs.LogLevel != nil {
		if !slices.Contains(logLevels, *hs.LogLevel) {
			p.errorf(valueRange(body, "log_level", def), "Invalid log_level", "log_level %q is not one of %s.", *hs.LogLevel, strings.Join(logLevels, ", "))
		} else {
			h.LogLevel = *hs.LogLevel
		}
	}
	h.ApprovalTimeout = p.duration(body, "approval_timeout", hs.ApprovalTimeout, h.ApprovalTimeout)
	h.ListenerTimeout = p.duration(body, "listener_timeout", hs.ListenerTimeout, h.ListenerTimeout)
	h.StartTimeout = p.duration(body, "start_timeout", hs.StartTimeout, h.StartTimeout)
	h.DrainTimeout = p.duration(body, "drain_timeout", hs.DrainTimeout, h.DrainTimeout)
	h.ShutdownTimeout = p.duration(body, "shutdown_timeout", hs.ShutdownTimeout, h.ShutdownTimeout)
	if hs.MetricsPublic != nil {
		h.MetricsPublic = *hs.MetricsPublic
	}
	h.MCPTLS = p.mcpTLS(hs.MCPTLS)
	h.MCPAuth = p.mcpAuth(hs.MCPAuth)
	if hs.MCP != nil {
		err := checkLoopback(*hs.MCP, "MCP")
		if errors.Is(err, errNotLoopback) && hs.MCPTLS != nil && hs.MCPAuth != nil {
			// Reachable from other machines, but only over TLS and with
			// a credential.
			err = nil
		}
		if err != nil {
			p.errorf(valueRange(body, "mcp", def), "Invalid mcp address", "mcp %q %v.", *hs.MCP, err)
		} else {
			h.MCP = *hs.MCP
		}
	}
	if hs.Metrics != nil {
		if err := checkLoopback(*hs.Metrics, "/metrics"); err != nil && !(h.MetricsPublic && errors.Is(err, errNotLoopback)) {
			p.errorf(valueRange(body, "metrics", def), "Invalid metrics address", "metrics %q %v.", *hs.Metrics, err)
		} else {
			h.Metrics = *hs.Metrics
		}
	}
	h.Tracing = p.tracing(hs.Tracing)
	h.MCPMaxSessions = p.count(body, "mcp_max_sessions", hs.MCPMaxSessions, 1, h.MCPMaxSessions)
	h.MCPIdleTimeout = p.duration(body, "mcp_idle_timeout", hs.MCPIdleTimeout, h.MCPIdleTimeout)
	if ps := hs.Policy; ps != nil {
		p.names(ps.Body, ps, "the policy block")
		if ps.Timeout != nil {
			h.Policy.Timeout = *ps.Timeout
		}
		h.Policy.Concurrency = p.count(ps.Body, "concurrency", ps.Concurrency, 0, 0)
		h.Policy.PerTool = p.count(ps.Body, "per_tool", ps.PerTool, 0, 0)
		if rs := ps.Retry; rs != nil {
			p.names(rs.Body, rs, "the retry block")
			r := &Retry{Backoff: defaultRetryBackoff, MaxBackoff: defaultRetryMaxBackoff}
			r.Attempts = p.count(rs.Body, "attempts", rs.Attempts, 1, defaultRetryAttempts)
			r.Backoff = p.duration(rs.Body, "backoff", rs.Backoff, r.Backoff)
			r.MaxBackoff = p.duration(rs.Body, "max_backoff", rs.MaxBackoff, r.MaxBackoff)
			p.backoffOrder(rs.Body, rs.DefRange, r.Backoff, r.MaxBackoff)
			h.Policy.Retry = r
		}
		if ps := ps.PerPrincipal; ps != nil {
			p.names(ps.Body, ps, "the per_principal block")
			pp := &PerPrincipal{}
			if ps.Rate != nil {
				if r := *ps.Rate; r < 0 || math.IsNaN(r) || math.IsInf(r, 0) {
					p.errorf(valueRange(ps.Body, "rate", ps.DefRange), "Invalid rate", "rate %v is not a number of calls a second (0 or more).", r)
				} else {
					pp.Rate = r
				}
			}
			pp.Burst = p.count(ps.Body, "burst", ps.Burst, 0, 0)
			pp.Concurrency = p.count(ps.Body, "concurrency", ps.Concurrency, 0, 0)
			pp.OnStoreError = "deny"
			if ps.Store != nil {
				if u, err := url.Parse(*ps.Store); err != nil || (u.Scheme != "redis" && u.Scheme != "rediss") || u.Host == "" {
					p.errorf(valueRange(ps.Body, "store", ps.DefRange), "Invalid store", `store is not a Redis URL such as "redis://127.0.0.1:6379/0" (or "rediss://" for TLS).`)
				} else {
					pp.Store = *ps.Store
				}
			}
			if ps.OnStoreError != nil {
				switch v := *ps.OnStoreError; v {
				case "deny", "local":
					pp.OnStoreError = v
				default:
					p.errorf(valueRange(ps.Body, "on_store_error", ps.DefRange), "Invalid on_store_error", `on_store_error = %q; want "deny" (calls are denied while the store cannot be reached) or "local" (each replica keeps its own limits meanwhile).`, v)
				}
				if ps.Store == nil {
					p.errorf(valueRange(ps.Body, "on_store_error", ps.DefRange), "on_store_error without a store", "on_store_error says what happens when the shared store cannot be reached; set store too, or leave it out.")
				}
			}
			h.Policy.PerPrincipal = pp
		}
	}
	return h
}

// tracing checks the host's tracing block: an http(s) endpoint, a sample
// share from 0 to 1.
func (p *parser) tracing(ts *tracingSyntax) *Tracing {
	if ts == nil {
		return nil
	}
	p.names(ts.Body, ts, "the tracing block")
	t := &Tracing{Sample: 1, Headers: ts.Headers}
	switch {
	case ts.Endpoint == nil:
		p.errorf(ts.DefRange, "Missing tracing endpoint", `The tracing block needs endpoint, the collector's OTLP/HTTP URL, such as "http://127.0.0.1:4318".`)
	default:
		u, err := url.Parse(*ts.Endpoint)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			p.errorf(valueRange(ts.Body, "endpoint", ts.DefRange), "Invalid tracing endpoint", `endpoint %q is not an http or https URL such as "http://127.0.0.1:4318".`, *ts.Endpoint)
			break
		}
		if u.Path == "" || u.Path == "/" {
			u.Path = "/v1/traces"
		}
		t.Endpoint = u.String()
	}
	if ts.Sample != nil {
		if s := *ts.Sample; s < 0 || s > 1 || math.IsNaN(s) {
			p.errorf(valueRange(ts.Body, "sample", ts.DefRange), "Invalid tracing sample", "sample %v is not a share from 0 to 1.", s)
		} else {
			t.Sample = s
		}
	}
	return t
}

// checkLoopback accepts host:port where host is "localhost" or a loopback
// IP and port is 1..65535; the error completes "mcp "x" …". what names
// the unauthenticated service served there.
func checkLoopback(addr, what string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return errors.New("is not a host:port address such as \"127.0.0.1:8765\"")
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return fmt.Errorf("has port %q; want a number from 1 to 65535", port)
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		if what == "MCP" {
			return fmt.Errorf("%w: MCP may be reachable from other machines only over TLS and with authentication (mcp_tls and mcp_auth blocks)", errNotLoopback)
		}
		return fmt.Errorf("%w: %s has no authentication, so it must not be reachable from other machines", errNotLoopback, what)
	}
	return nil
}

var errNotLoopback = errors.New("is not on a loopback address (127.0.0.1, ::1 or localhost)")

// mcpTLS checks the mcp_tls block: both files, readable as a key pair.
func (p *parser) mcpTLS(ts *mcpTLSSyntax) *TLSFiles {
	if ts == nil {
		return nil
	}
	p.names(ts.Body, ts, "the mcp_tls block")
	if ts.Cert == nil || ts.Key == nil {
		p.errorf(ts.DefRange, "Incomplete mcp_tls block", "mcp_tls needs cert and key, PEM files of the server's certificate (chain) and its private key.")
		return nil
	}
	t := &TLSFiles{}
	t.Cert, _ = p.resolve(*ts.Cert)
	t.Key, _ = p.resolve(*ts.Key)
	if _, err := LoadKeyPair(t.Cert, t.Key); err != nil {
		p.errorf(valueRange(ts.Body, "cert", ts.DefRange), "Invalid mcp_tls files", "cert %q and key %q: %v.", *ts.Cert, *ts.Key, err)
		return nil
	}
	return t
}

// MaxTLSFileBytes is the largest certificate or key file read: a chain of
// a few certificates is a few KiB.
const MaxTLSFileBytes = 1 << 20

// LoadKeyPair reads a PEM certificate (chain) and its private key, each at
// most MaxTLSFileBytes, as tls.LoadX509KeyPair does: at start, by `host
// validate` and on every refresh (SIGHUP, `host reload`).
func LoadKeyPair(certFile, keyFile string) (tls.Certificate, error) {
	cert, err := hclbound.ReadAtMost(certFile, MaxTLSFileBytes)
	if err != nil {
		return tls.Certificate{}, err
	}
	key, err := hclbound.ReadAtMost(keyFile, MaxTLSFileBytes)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.X509KeyPair(cert, key)
}

// mcpAuth checks the mcp_auth block: a keys file that reads, an oauth
// block, or both.
func (p *parser) mcpAuth(as *mcpAuthSyntax) *MCPAuth {
	if as == nil {
		return nil
	}
	p.names(as.Body, as, "the mcp_auth block")
	if as.Keys == nil && as.OAuth == nil {
		p.errorf(as.DefRange, "Incomplete mcp_auth block", "mcp_auth needs keys, a file of API keys (make one with `host key add NAME`), an oauth block, or both.")
		return nil
	}
	a := &MCPAuth{OAuth: p.oauth(as.OAuth)}
	if as.Keys != nil {
		var shown string
		a.Keys, shown = p.resolve(*as.Keys)
		if _, err := os.Stat(a.Keys); errors.Is(err, fs.ErrNotExist) {
			p.errorf(valueRange(as.Body, "keys", as.DefRange), "Missing keys file", "keys file %s does not exist: make it with `host key add NAME`.", shown)
		} else if _, diags := authn.LoadKeys(a.Keys); diags.HasErrors() {
			p.diags = append(p.diags, diags...)
		}
	}
	// Kept with its errors too: `host key add` needs to know the file.
	return a
}

// oauth checks an mcp_auth oauth block: the issuer, its keys' URL and this
// server's audience, URLs over https (or http on loopback, for a local
// issuer).
func (p *parser) oauth(o *oauthSyntax) *authn.OAuthConfig {
	if o == nil {
		return nil
	}
	p.names(o.Body, o, "the oauth block")
	c := &authn.OAuthConfig{Scopes: o.Scopes}
	for _, f := range []struct {
		name string
		v    *string
		to   *string
	}{{"issuer", o.Issuer, &c.Issuer}, {"jwks_url", o.JWKSURL, &c.JWKSURL}, {"audience", o.Audience, &c.Audience}} {
		if f.v == nil {
			p.errorf(o.DefRange, "Incomplete oauth block", "oauth needs %s.", f.name)
			continue
		}
		if err := checkHTTPS(*f.v); err != nil {
			p.errorf(valueRange(o.Body, f.name, o.DefRange), "Invalid "+f.name, "%s %q %v.", f.name, *f.v, err)
			continue
		}
		*f.to = *f.v
	}
	if o.GroupsClaim != nil {
		c.GroupsClaim = *o.GroupsClaim
	}
	if o.Kind != nil {
		if k := *o.Kind; k != "user" && k != "agent" && k != "service" {
			p.errorf(valueRange(o.Body, "kind", o.DefRange), "Invalid kind", "kind %q is not user, agent or service.", k)
		} else {
			c.Kind = k
		}
	}
	return c
}

// checkHTTPS accepts an https URL, or an http one on a loopback host.
func checkHTTPS(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return errors.New("is not an absolute URL")
	}
	switch u.Scheme {
	case "https":
		return nil
	case "http":
		if ip := net.ParseIP(u.Hostname()); u.Hostname() == "localhost" || (ip != nil && ip.IsLoopback()) {
			return nil
		}
	}
	return errors.New("is not an https URL (http is accepted on loopback only)")
}

// duration parses a duration attribute; it must be positive (the remote
// manager and the policies read zero as "use the default", which the file
// says by leaving the attribute out).
func (p *parser) duration(body hcl.Body, name string, v *string, def time.Duration) time.Duration {
	if v == nil || !p.decoded(body, name) {
		return def
	}
	r := valueRange(body, name, body.MissingItemRange())
	d, err := time.ParseDuration(*v)
	if err != nil {
		p.errorf(r, "Invalid duration", "%s = %q is not a duration; write one such as \"30s\", \"1m30s\" or \"100ms\".", name, *v)
		return def
	}
	if d <= 0 {
		p.errorf(r, "Invalid duration", "%s must be greater than zero (got %q); leave it out for the default %s.", name, *v, def)
		return def
	}
	return d
}

// count reads a whole-number attribute that must be at least min.
func (p *parser) count(body hcl.Body, name string, v *int, min, def int) int {
	if v == nil || !p.decoded(body, name) {
		return def
	}
	if *v < min {
		p.errorf(valueRange(body, name, body.MissingItemRange()), "Invalid "+name, "%s must be at least %d (got %d).", name, min, *v)
		return def
	}
	return *v
}

func (p *parser) backoffOrder(body hcl.Body, def hcl.Range, backoff, max time.Duration) {
	if max < backoff {
		p.errorf(valueRange(body, "max_backoff", def), "Invalid max_backoff", "max_backoff (%s) is less than backoff (%s).", max, backoff)
	}
}

// pluginName is what a plugin may be called: it names the plugin in logs,
// admin commands and files.
var pluginName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)

var hexDigest = regexp.MustCompile(`^[0-9a-fA-F]{64}$`)

func (p *parser) plugins(list []pluginSyntax) []Plugin {
	first := map[string]hcl.Range{}
	out := make([]Plugin, 0, len(list))
	for i := range list {
		ps := &list[i]
		pl := p.plugin(ps) // a duplicate too, for its own problems
		if prev, dup := first[ps.Name]; dup {
			p.errorf(ps.NameRange, "Duplicate plugin", "A plugin named %q is already declared at %s; plugin names must be unique.", ps.Name, at(prev))
			continue
		}
		first[ps.Name] = ps.DefRange
		out = append(out, pl)
	}
	return out
}

func (p *parser) plugin(ps *pluginSyntax) Plugin {
	p.names(ps.Body, ps, "the plugin block")
	sb, _ := ps.Body.(*hclsyntax.Body)
	pl := Plugin{
		Name:           ps.Name,
		Critical:       ps.Critical,
		Watch:          ps.Watch,
		Restart:        defaultRestart,
		MaxResultBytes: p.count(ps.Body, "max_result_bytes", ps.MaxResult, 1, p.maxResult),
		Config:         json.RawMessage("{}"),
		Range:          ps.DefRange,
		ConfigRange:    ps.DefRange,
		configOK:       true,
		src:            &pluginSource{body: sb, config: map[string]hcl.Range{"": ps.DefRange}},
	}
	if !pluginName.MatchString(ps.Name) {
		p.errorf(ps.NameRange, "Invalid plugin name", "Plugin name %q must start with a letter or digit and hold only letters, digits, '_', '.' and '-'.", ps.Name)
	}

	binaryErrs := p.diags.Errs()
	var sum string
	if ps.SHA256 != nil {
		if hexDigest.MatchString(*ps.SHA256) {
			sum = strings.ToLower(*ps.SHA256)
			pl.SHA256 = sum
		} else {
			p.errorf(valueRange(ps.Body, "sha256", ps.DefRange), "Invalid sha256", "sha256 must be 64 hexadecimal digits (a SHA-256 digest); got %d characters.", len(*ps.SHA256))
		}
	}
	switch {
	case ps.Path != nil:
		pl.Path = p.binary(ps.Body, ps.DefRange, *ps.Path, sum)
		pl.Dir = p.absDir()
	case attribute(ps.Body, "path") == nil || p.decoded(ps.Body, "path"): // not written, or null
		p.errorf(ps.DefRange, "Missing path", "Plugin %q has no path; path names the plugin's binary, relative to this file.", ps.Name)
	}
	pl.binaryOK = pl.Path != "" && len(p.diags.Errs()) == len(binaryErrs)

	if ps.Inject != nil && p.decoded(ps.Body, "inject") {
		pl.Inject = p.nameList(ps.Body, "inject", *ps.Inject, ps.DefRange, "service")
	}

	if rs := ps.Restart; rs != nil {
		p.names(rs.Body, rs, "the restart block")
		r := defaultRestart
		r.Attempts = p.count(rs.Body, "attempts", rs.Attempts, 1, r.Attempts)
		r.Window = p.duration(rs.Body, "window", rs.Window, r.Window)
		r.Backoff = p.duration(rs.Body, "backoff", rs.Backoff, r.Backoff)
		r.MaxBackoff = p.duration(rs.Body, "max_backoff", rs.MaxBackoff, r.MaxBackoff)
		p.backoffOrder(rs.Body, rs.DefRange, r.Backoff, r.MaxBackoff)
		pl.Restart = r
	}

	if ts := ps.Tools; ts != nil {
		p.names(ts.Body, ts, "the tools block")
		if ts.Enabled != nil && p.decoded(ts.Body, "enabled") {
			pl.EnabledTools = p.nameList(ts.Body, "enabled", *ts.Enabled, ts.DefRange, "tool")
		}
		if ts.Disabled != nil && p.decoded(ts.Body, "disabled") {
			pl.DisabledTools = p.nameList(ts.Body, "disabled", *ts.Disabled, ts.DefRange, "tool")
			for i, t := range *ts.Disabled {
				if j := slices.Index(pl.EnabledTools, t); j >= 0 && t != "" {
					p.errorf(itemRange(ts.Body, "disabled", i, ts.DefRange), "Tool both enabled and disabled",
						"Tool %q is in enabled (line %d) and in disabled; list it in one of them.", t, itemRange(ts.Body, "enabled", j, ts.DefRange).Start.Line)
				}
			}
		}
	}

	pl.Sandbox = p.defaultSandbox.refine(p.sandbox(ps.Sandbox))

	if cs := ps.Config; cs != nil {
		raw, src, diags := configJSON(cs.Body, cs.DefRange)
		p.diags = append(p.diags, diags...)
		pl.configOK = !diags.HasErrors()
		pl.Config, pl.src.config, pl.ConfigRange = raw, src, cs.DefRange
		if pl.configOK {
			p.upstream(&pl)
		}
	}
	return pl
}

// nameList checks a list of names (services, tools): none empty, none twice.
// It returns the list as written.
func (p *parser) nameList(body hcl.Body, attr string, list []string, def hcl.Range, what string) []string {
	for i, n := range list {
		r := itemRange(body, attr, i, def)
		switch {
		case strings.TrimSpace(n) == "":
			p.errorf(r, "Invalid "+attr, "An empty %s name in %s.", what, attr)
		case slices.Index(list, n) < i:
			p.errorf(r, "Duplicate "+what, "%s %q is listed twice in %s.", upperFirst(what), n, attr)
		}
	}
	if list == nil {
		// inject = [] means "nothing", which nil (not written) does not.
		list = []string{}
	}
	return list
}

// binary checks a plugin's binary: it exists, is an executable file, and
// matches sum (a valid lower-case digest) unless sum is empty. It returns
// the absolute path.
func (p *parser) binary(body hcl.Body, def hcl.Range, written, sum string) string {
	pathRange := valueRange(body, "path", def)
	if written == "" {
		p.errorf(pathRange, "Invalid path", "path must not be empty: it names the plugin's binary, relative to this file.")
		return ""
	}
	abs, shown := p.resolve(written)
	info, err := os.Stat(abs)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		p.errorf(pathRange, "Plugin binary not found", "%s does not exist.", shown)
		return abs
	case err != nil:
		p.errorf(pathRange, "Plugin binary unreadable", "%v.", err)
		return abs
	case info.IsDir():
		p.errorf(pathRange, "Plugin binary is a folder", "%s is a folder, not an executable file.", shown)
		return abs
	case info.Mode().Perm()&0o111 == 0:
		p.errorf(pathRange, "Plugin binary not executable", "%s is not executable (mode %s); chmod +x it.", shown, info.Mode().Perm())
		return abs
	}
	if sum == "" {
		return abs
	}
	actual, err := fileSHA256(abs)
	if err != nil {
		p.errorf(pathRange, "Plugin binary unreadable", "%v.", err)
		return abs
	}
	if actual != sum {
		p.errorf(valueRange(body, "sha256", def), "Checksum mismatch", "sha256 pins %s, but %s has SHA-256 %s.", sum, shown, actual)
	}
	return abs
}

func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// absDir is the deployment file's folder as an absolute path.
func (p *parser) absDir() string {
	abs, _ := p.resolve(".")
	return abs
}
