package deployment

import (
	"github.com/plugkit-go/plugkit/authn"

	"encoding/json"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"

	"github.com/plugkit-go/plugkit/tokenexchange"
)

// Deployment is a parsed deployment file.
type Deployment struct {
	// File is the path of the deployment file as given to Parse.
	File string
	Host Host
	// Plugins in file order after Parse; in start order after a Check
	// without errors (each plugin after the providers it injects).
	Plugins []Plugin
	// Approvals are the approval routes, in file order; an Ask about a
	// tool none of them claims is put to the caller (CallerRoute).
	Approvals []Approval
	// Console is the web console; nil when the file has no console block.
	Console *Console
}

// Host holds the host block, defaults filled in.
type Host struct {
	// AdminSocket is the absolute path of the admin socket.
	AdminSocket string
	// RunDir is the absolute folder the host makes its private plugin
	// socket folder in; "" for TMPDIR, or /tmp.
	RunDir string
	// ExplainOnly is not read from the file: `host test` sets it when no
	// case executes (remote.Options.ExplainOnly).
	ExplainOnly     bool
	AutoMTLS        bool
	MaxMessageBytes int
	// MaxResultBytes is every plugin's max_result_bytes unless its own
	// block says otherwise.
	MaxResultBytes int
	// MaxArgumentBytes bounds a call's arguments (stage 0, every front
	// end) unless the block of the tool's plugin says otherwise.
	MaxArgumentBytes int
	// MaxDescriptionBytes bounds each tool's description; a longer one
	// is held absent with the reason.
	MaxDescriptionBytes int
	// LogLevel is one of trace, debug, info, warn, error.
	LogLevel        string
	ApprovalTimeout time.Duration
	ListenerTimeout time.Duration
	StartTimeout    time.Duration
	DrainTimeout    time.Duration
	// ShutdownTimeout is how long `host run`, told to stop (SIGTERM,
	// `host stop`), lets the calls in flight finish while it refuses new
	// ones, before it stops the plugins.
	ShutdownTimeout time.Duration
	// MCP is the loopback host:port to serve MCP on; empty: not served.
	MCP string
	// Metrics is the loopback host:port to serve Prometheus metrics on
	// (/metrics); empty: not served.
	Metrics string
	// MetricsPublic lets Metrics be on any address, for a cluster's
	// probes and scrapers: it serves counts and states, /healthz and
	// /readyz, never a call's content.
	MetricsPublic bool
	// MCPMaxSessions caps the MCP HTTP sessions (one more closes the one
	// idle longest); MCPIdleTimeout ends a session that sends no request
	// for that long.
	MCPMaxSessions int
	MCPIdleTimeout time.Duration
	// MCPMaxConnsPerPeer caps the MCP HTTP connections one peer (an
	// address, or a user on loopback) holds at once, of the server's 256;
	// one more is refused with 429 unless one of the peer's is idle.
	MCPMaxConnsPerPeer int
	// MCPAllowedOrigins are the browser origins (scheme://host[:port],
	// normalised) whose requests MCP serves, besides loopback origins on a
	// loopback listener; a request with another Origin header gets 403.
	MCPAllowedOrigins []string
	// MCPStateKey is the key file (absolute path, LoadStateKeys) that
	// seals the requestState of a question put to a 2026-07-28 MCP client;
	// replicas that share it accept each other's. "" for a key of the
	// process's own.
	MCPStateKey string
	// MCPToolSearch serves the search_tools tool over MCP; a caller who
	// sees more than MCPToolSearchOver tools is listed search_tools alone
	// and finds the others by searching (0: always).
	MCPToolSearch     bool
	MCPToolSearchOver int
	Policy            Policy
	// Sandbox is the default sandbox of every plugin; nil without one.
	Sandbox *Sandbox
	// Tracing is where to send OpenTelemetry traces; nil: no tracing.
	Tracing *Tracing
	// MCPTLS, when set, serves MCP over HTTPS with this certificate.
	MCPTLS *TLSFiles
	// MCPAuth, when set, requires every MCP HTTP request to carry a
	// credential. A non-loopback mcp address needs both.
	MCPAuth *MCPAuth
	// Receipts gives every call's result its audit receipt: where a
	// critical audit plugin recorded it (seq and line hash).
	Receipts bool
	// EgressResolver is the DNS server (host:port) the egress proxies of
	// sandboxed plugins ask for the names on their lists; "" for the
	// system's resolver.
	EgressResolver string
	// ReceiptsFrom names the critical plugin whose receipts are handed
	// back; "" for the one critical plugin that declares receipts.
	// ReceiptsFromRange is where the file sets it.
	ReceiptsFrom      string
	ReceiptsFromRange hcl.Range
	// UserConsent is where users' browsers come back after consenting to
	// a bridged upstream, and where their tokens are kept; nil without a
	// user_consent block.
	UserConsent *UserConsent

	// ApprovalStore, when set, is a Redis URL where every replica keeps
	// the requests of the approval routes, so that any replica lists and
	// answers them; "" keeps them in this process.
	ApprovalStore string
	// ApprovalLeaseTTL is how long a replica's parked calls outlive it in
	// the store: past it, their requests are abandoned. 0 without a store.
	ApprovalLeaseTTL time.Duration
}

// TLSFiles are a PEM certificate (chain) and its key, absolute paths; they
// are read again on every reload.
type TLSFiles struct {
	Cert, Key string
}

// MCPAuth says which credentials MCP HTTP clients may present: API keys,
// an issuer's access tokens, or both.
type MCPAuth struct {
	// Keys is the absolute path of an API keys file (package authn); ""
	// when no API key is accepted.
	Keys string
	// OAuth, when set, accepts the access tokens of one issuer.
	OAuth *authn.OAuthConfig
}

// Tracing sends a span per call, per stage and per plugin RPC, and the
// plugins' own spans, to an OTLP/HTTP collector.
type Tracing struct {
	// Endpoint is the collector's OTLP/HTTP traces URL
	// ("http://127.0.0.1:4318/v1/traces"; a URL with no path gets
	// /v1/traces).
	Endpoint string
	// Sample is the share of calls traced, 0 to 1 (default 1). A call
	// whose client sent a trace context follows the client's decision.
	Sample float64
	// Headers are sent with every export (a collector's API key).
	Headers map[string]string
}

// Policy selects the built-in call policies.
type Policy struct {
	// Timeout turns on the timeout policy (each tool's declared timeout).
	Timeout bool
	// Concurrency limits calls across all tools; 0 means no limit.
	Concurrency int
	// PerTool limits calls to each tool; 0 means no limit.
	PerTool int
	// Retry is nil unless the file has a retry block.
	Retry *Retry
	// PerPrincipal is nil unless the file has a per_principal block.
	PerPrincipal *PerPrincipal
}

// PerPrincipal bounds each principal's calls; a zero field is no bound.
type PerPrincipal struct {
	// Rate is calls a second, Burst how many at once past it.
	Rate  float64
	Burst int
	// Concurrency is calls running at once.
	Concurrency int
	// Store, when set, is a Redis URL ("redis://host:6379/0",
	// "rediss://..." for TLS) where every replica keeps the limits, so
	// that they hold across replicas; "" keeps them in this process.
	Store string
	// OnStoreError is what a call gets while the store cannot be reached:
	// "deny" (the default) or "local" (this replica's own limits).
	OnStoreError string
	// LeaseTTL is how long a call's concurrency slot in the store outlives
	// a replica that died holding it; a running call renews it every third
	// of it. 0 (no store) or at least MinLeaseTTL.
	LeaseTTL time.Duration
}

// Retry bounds the retry policy for idempotent tools.
type Retry struct {
	Attempts   int
	Backoff    time.Duration
	MaxBackoff time.Duration
}

// Plugin is one plugin block.
type Plugin struct {
	Name string
	// AnswersVisibility: the plugin declares that its listeners answer the
	// visibility question (filled in by Check from its declaration; host
	// validate names the plugins that do not).
	AnswersVisibility bool
	// Path is the binary's absolute path.
	Path string
	// Dir is the folder of the deployment file: the plugin's working folder,
	// so relative paths in its config are relative to the file.
	Dir string
	// SHA256 pins the binary (lower-case hex); empty when not pinned.
	SHA256 string
	// Inject lists the services the plugin needs; nil when the file does not
	// say, which takes what the plugin declares (Check fills it in).
	Inject   []string
	Critical bool
	// Watch asks for a reload when the binary changes.
	Watch bool
	// MaxResultBytes bounds a result of one of its tools (larger ends the
	// call TOOL_ERROR) and what its result observers receive of any result
	// (larger arrives as its size, digest and head).
	MaxResultBytes int
	// MaxArgumentBytes bounds the arguments of a call to one of its tools;
	// 0 leaves it the host block's.
	MaxArgumentBytes int
	Restart          Restart
	// EnabledTools is the allow-list: nil allows every tool.
	EnabledTools []string
	// DisabledTools is the deny-list.
	DisabledTools []string
	// Config is the config block as a JSON object ({} without a block); see
	// docs/deployment-file.md for how HCL becomes JSON.
	Config json.RawMessage
	// Range is the plugin block's header (`plugin "name"`).
	Range hcl.Range
	// ConfigRange is the config block's header, or Range without one.
	ConfigRange hcl.Range
	// Sandbox is the plugin's sandbox: its own block refining the host's
	// default; nil when neither exists.
	Sandbox *Sandbox
	// Upstream is the config's auth block when the host obtains the
	// upstream's tokens (token_exchange, client_credentials); nil
	// otherwise.
	Upstream *tokenexchange.Upstream
	// Shadow are the plugin's shadow blocks (shadow.go): nil when none.
	Shadow []Shadow

	// upstreamRange is where the auth block's mode was written.
	upstreamRange hcl.Range
	// src keeps where things were written, for Check's diagnostics; nil for
	// a Plugin built in code, whose diagnostics then point at Range.
	src *pluginSource
	// binaryOK and configOK say that Parse found nothing wrong with the
	// plugin's binary (path, sha256) and with its config block: then it can
	// be asked for its declaration and its config checked, even when
	// something else in the file is wrong (CheckConfigs).
	binaryOK, configOK bool
}

// pluginSource is where a plugin's values were written.
type pluginSource struct {
	// body is the plugin block's body (the inject attribute and its items).
	body *hclsyntax.Body
	// config maps a JSON Pointer into Config to where that value was written.
	config map[string]hcl.Range
}

// Restart bounds how a crashed plugin is restarted: at most Attempts
// restarts in Window, waiting Backoff doubling up to MaxBackoff between
// them. The host turns it into the plugin manager's policy.
type Restart struct {
	Attempts   int
	Window     time.Duration
	Backoff    time.Duration
	MaxBackoff time.Duration
}

// Built-in services: provided by the host itself, never by a plugin (the
// pipeline's tools, the kernel's points and logger; a test checks the
// names).
var builtinServices = []string{"tools", "points", "logger"}

// Log levels a host accepts.
var logLevels = []string{"trace", "debug", "info", "warn", "error"}

// Defaults of what the file leaves out.
const (
	defaultAdminSocket     = "plugkit.sock"
	defaultLogLevel        = "info"
	defaultApprovalTimeout = 60 * time.Second
	defaultListenerTimeout = 30 * time.Second
	defaultStartTimeout    = 30 * time.Second
	defaultDrainTimeout    = 5 * time.Second
	// Under Kubernetes' default grace period of 30s.
	defaultShutdownTimeout = 25 * time.Second
	defaultMCPMaxSessions  = 64
	// A quarter of the MCP server's connection cap (mcpserver).
	defaultMCPMaxConnsPerPeer = 64
	defaultMCPIdleTimeout     = 5 * time.Minute
	defaultRetryAttempts      = 3
	defaultRetryBackoff       = 50 * time.Millisecond
	defaultRetryMaxBackoff    = time.Second
	// The plugin manager's and the wire's defaults, written here so that
	// reading a file links nothing of the runtime (a test checks them).
	defaultMaxResultBytes  = 16 << 20
	defaultMaxMessageBytes = 64 << 20
	// defaultMaxArgumentBytes is the pipeline's default bound on a call's arguments.
	defaultMaxArgumentBytes = 4 << 20
	// maxRunDirBytes is the plugin manager's longest socket folder base
	// (a Unix socket's path is at most 107 bytes).
	maxRunDirBytes = 107 - 65
	// defaultMaxDescriptionBytes is the pipeline's default bound on a
	// tool's description.
	defaultMaxDescriptionBytes = 16 << 10
)

// defaultRestart matches the plugin manager's own defaults, written out so
// that a parsed Deployment shows what will apply (the host's tests check
// that they agree, as for the sizes below).
var defaultRestart = Restart{
	Attempts:   5,
	Window:     time.Minute,
	Backoff:    100 * time.Millisecond,
	MaxBackoff: 10 * time.Second,
}
