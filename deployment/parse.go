package deployment

import (
	"errors"
	"math"
	"net"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/gohcl"
	"github.com/hashicorp/hcl/v2/hclsyntax"
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
	d.Approvals = p.approvals(syn.Approvals)
	d.Console = p.console(syn.Console)
	p.checkUpstreams(d)
	p.checkVaultReach(d)
	p.checkReceiptsFrom(d)
	// After the walks above, which record the attribute names retype uses.
	p.diags = append(p.diags, retype(decoded, p.valueNames)...)
	return d, unquoted(file.Body, src, sortDiags(p.diags))
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
		AutoMTLS:            true,
		MaxMessageBytes:     defaultMaxMessageBytes,
		MaxResultBytes:      defaultMaxResultBytes,
		MaxArgumentBytes:    defaultMaxArgumentBytes,
		MaxDescriptionBytes: defaultMaxDescriptionBytes,
		LogLevel:            defaultLogLevel,
		ApprovalTimeout:     defaultApprovalTimeout,
		ListenerTimeout:     defaultListenerTimeout,
		StartTimeout:        defaultStartTimeout,
		DrainTimeout:        defaultDrainTimeout,
		ShutdownTimeout:     defaultShutdownTimeout,
		MCPMaxSessions:      defaultMCPMaxSessions,
		MCPMaxConnsPerPeer:  defaultMCPMaxConnsPerPeer,
		MCPIdleTimeout:      defaultMCPIdleTimeout,
		Policy:              Policy{Timeout: true},
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
	if hs.RunDir != nil {
		dir, _ := p.resolve(*hs.RunDir)
		switch {
		case *hs.RunDir == "":
			p.errorf(valueRange(body, "run_dir", def), "Invalid run_dir", "run_dir must not be empty; leave it out for TMPDIR, or /tmp.")
		case len(dir) > maxRunDirBytes:
			p.errorf(valueRange(body, "run_dir", def), "Invalid run_dir",
				"run_dir %s is %d bytes long, at most %d: the plugins' sockets go below it, and a Unix socket's path is at most 107 bytes.", dir, len(dir), maxRunDirBytes)
		default:
			h.RunDir = dir
		}
	}
	if hs.AutoMTLS != nil {
		h.AutoMTLS = *hs.AutoMTLS
	}
	if hs.Receipts != nil {
		h.Receipts = *hs.Receipts
	}
	if hs.EgressResolver != nil {
		if _, _, err := net.SplitHostPort(*hs.EgressResolver); err != nil {
			p.errorf(valueRange(body, "egress_resolver", def), "Invalid egress_resolver", "egress_resolver must be a DNS server's host:port, such as \"10.0.0.2:53\": %v.", err)
		} else {
			h.EgressResolver = *hs.EgressResolver
		}
	}
	if hs.ReceiptsFrom != nil {
		h.ReceiptsFrom, h.ReceiptsFromRange = *hs.ReceiptsFrom, valueRange(body, "receipts_from", def)
	}
	if hs.MaxMessageBytes != nil && p.decoded(body, "max_message_bytes") {
		if err := validateMaxMessageBytes(*hs.MaxMessageBytes); err != nil {
			p.errorf(valueRange(body, "max_message_bytes", def), "Invalid max_message_bytes", "%s.", upperFirst(err.Error()))
		} else {
			h.MaxMessageBytes = *hs.MaxMessageBytes
		}
	}
	h.MaxResultBytes = p.count(body, "max_result_bytes", hs.MaxResultBytes, 1, h.MaxResultBytes)
	h.MaxArgumentBytes = p.count(body, "max_argument_bytes", hs.MaxArgBytes, 1, h.MaxArgumentBytes)
	p.maxResult = h.MaxResultBytes
	h.MaxDescriptionBytes = p.count(body, "max_description_bytes", hs.MaxDescBytes, 1, h.MaxDescriptionBytes)
	if hs.LogLevel != nil {
		if !slices.Contains(logLevels, *hs.LogLevel) {
			p.errorf(valueRange(body, "log_level", def), "Invalid log_level", "log_level %q is not one of %s.", *hs.LogLevel, strings.Join(logLevels, ", "))
		} else {
			h.LogLevel = *hs.LogLevel
		}
	}
	h.ApprovalTimeout = p.duration(body, "approval_timeout", hs.ApprovalTimeout, h.ApprovalTimeout)
	p.approvalStore(hs, &h)
	h.ListenerTimeout = p.duration(body, "listener_timeout", hs.ListenerTimeout, h.ListenerTimeout)
	h.StartTimeout = p.duration(body, "start_timeout", hs.StartTimeout, h.StartTimeout)
	h.DrainTimeout = p.duration(body, "drain_timeout", hs.DrainTimeout, h.DrainTimeout)
	h.ShutdownTimeout = p.duration(body, "shutdown_timeout", hs.ShutdownTimeout, h.ShutdownTimeout)
	if hs.MetricsPublic != nil {
		h.MetricsPublic = *hs.MetricsPublic
	}
	p.mcp(hs, &h)
	if hs.Metrics != nil {
		if err := checkLoopback(*hs.Metrics, "/metrics"); err != nil && !(h.MetricsPublic && errors.Is(err, errNotLoopback)) {
			p.errorf(valueRange(body, "metrics", def), "Invalid metrics address", "metrics %q %v.", *hs.Metrics, err)
		} else {
			h.Metrics = *hs.Metrics
		}
	}
	h.Tracing = p.tracing(hs.Tracing)
	h.UserConsent = p.userConsent(hs.UserConsent)
	if hs.Policy != nil {
		h.Policy = p.policy(hs.Policy, h.Policy)
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

// Lease times to live: the default, and the least (renewals come every
// third of it, and each may take a while).
const (
	DefaultLeaseTTL = 30 * time.Second
	MinLeaseTTL     = time.Second
)

// leaseTTL reads per_principal's lease_ttl, which only means something
// with a store.
func (p *parser) leaseTTL(ps *perPrincipalSyntax) time.Duration {
	r := valueRange(ps.Body, "lease_ttl", ps.DefRange)
	if ps.Store == nil {
		p.errorf(r, "lease_ttl without a store", "lease_ttl is how long a concurrency slot in the shared store outlives a replica that died holding it; set store too, or leave it out.")
		return 0
	}
	d := p.duration(ps.Body, "lease_ttl", ps.LeaseTTL, DefaultLeaseTTL)
	if d < MinLeaseTTL {
		p.errorf(r, "Invalid lease_ttl", "lease_ttl = %q is less than %s: a running call renews its lease every third of it.", *ps.LeaseTTL, MinLeaseTTL)
		return DefaultLeaseTTL
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

// absDir is the deployment file's folder as an absolute path.
func (p *parser) absDir() string {
	abs, _ := p.resolve(".")
	return abs
}
