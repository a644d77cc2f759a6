// Package deployment reads the deployment file: one HCL file that declares
// the host's settings and one block per plugin.
//
// Reading it takes two steps, and both gather every problem before returning
// (they never stop at the first), each as an hcl.Diagnostic with the file,
// line and column:
//
//  1. Parse reads the file alone: syntax, names, types, durations, duplicate
//     plugins, host settings, and each plugin's binary (it exists, it is
//     executable, it matches its pinned sha256) and tools lists.
//  2. Check asks each plugin for its declaration (the caller starts the binary
//     and asks it) and adds what needs it: the config body against the
//     plugin's config JSON Schema, every injected service has a provider, no
//     dependency cycle; then it puts the plugins in start order.
//
// Nothing should be started while either step reports an error. Format prints
// the diagnostics one line each.
//
// # The file
//
// Paths are relative to the file's folder; durations are Go duration strings
// ("30s", "1m30s", "100ms"). Every attribute is optional except a plugin's
// path; an unknown attribute or block is an error that names the allowed ones.
//
//	host {
//	  admin_socket      = "run/host.sock"   # default "plugkit.sock" beside the file
//	  auto_mtls         = true              # default true
//	  max_message_bytes = 67108864          # default 64 MiB
//	  max_result_bytes  = 16777216          # default 16 MiB: every plugin's, unless its block says
//	  max_argument_bytes = 4194304          # default 4 MiB: a call's arguments, checked first in stage 0
//	  max_description_bytes = 16384         # default 16 KiB: a tool with a longer description is held absent
//	  log_level         = "info"            # trace|debug|info|warn|error (default info)
//	  approval_timeout  = "60s"             # default 60s
//	  listener_timeout  = "30s"             # default 30s
//	  start_timeout     = "30s"             # default 30s
//	  drain_timeout     = "5s"              # default 5s
//	  shutdown_timeout  = "25s"             # on SIGTERM or host stop: calls in flight get this long (default 25s)
//	  mcp               = "127.0.0.1:8765"  # optional; a loopback host:port, or any with mcp_tls and mcp_auth
//	  mcp_max_sessions  = 64                # MCP HTTP sessions kept at once (default 64)
//	  mcp_max_conns_per_peer = 64           # MCP HTTP connections of one address, or loopback user (default 64)
//	  mcp_allowed_origins = ["https://app.example"] # browser origins MCP serves; loopback ones on loopback (default none)
//	  mcp_idle_timeout  = "5m"              # an MCP session with no request this long ends (default 5m)
//	  metrics           = "127.0.0.1:9464"  # optional: serve Prometheus metrics at /metrics, /healthz and /readyz (loopback only)
//	  metrics_public    = false             # true allows any metrics address (a cluster's probes and scrapers)
//	  mcp_tls {                             # optional: serve MCP over HTTPS
//	    cert = "tls/host.crt"               # PEM certificate (chain) and key, read again on reload
//	    key  = "tls/host.key"
//	  }
//	  mcp_auth {                            # optional: every MCP HTTP request needs a credential
//	    keys = "keys.hcl"                   # API keys file (host key add NAME)
//	  }                                     # mcp off loopback needs mcp_tls and mcp_auth
//	  tracing {                             # optional: OpenTelemetry traces over OTLP/HTTP
//	    endpoint = "http://127.0.0.1:4318"  # required; with no path, /v1/traces
//	    sample   = 1.0                      # share of calls traced, 0 to 1 (default 1)
//	    headers  = { "api-key" = "…" }      # optional
//	  }
//	  policy {
//	    timeout     = true                  # the timeout policy (default true)
//	    concurrency = 16                    # global limit; 0 = none (default)
//	    per_tool    = 4                     # per-tool limit; 0 = none (default)
//	    per_principal {                     # optional: each principal's limits (0 = none)
//	      rate        = 10                  # calls a second; past it and its burst, DENIED
//	      burst       = 20                  # default: rate rounded up
//	      concurrency = 4                   # calls running at once; past it, DENIED
//	      store       = "redis://redis:6379/0" # optional: limits shared by every replica
//	      on_store_error = "deny"           # store unreachable: "deny" (default) or "local"
//	      lease_ttl   = "30s"               # with store: a dead replica's slots come back after it
//	    }
//	    retry {                             # optional: retry idempotent tools
//	      attempts    = 3                   # defaults 3, 50ms, 1s
//	      backoff     = "50ms"
//	      max_backoff = "1s"
//	    }
//	  }
//	  sandbox { … }                         # optional: every plugin's default sandbox
//	}
//
//	plugin "index" {
//	  path     = "bin/plugins/index"        # required
//	  sha256   = "9f86d0…"                  # optional, 64 hex digits
//	  inject   = ["tools"]                  # services it needs (default: what it declares)
//	  critical = false
//	  watch    = false                      # reload when the binary changes
//	  max_result_bytes = 16777216           # a larger result of its tools ends the call TOOL_ERROR;
//	                                        # its observers get a larger one as size, sha256 and head
//	  max_argument_bytes = 4194304          # its tools' arguments (default: the host block's)
//	  restart {                             # defaults 5, 1m, 100ms, 10s
//	    attempts    = 5
//	    window      = "1m"
//	    backoff     = "100ms"
//	    max_backoff = "10s"
//	  }
//	  tools {
//	    enabled  = ["search"]               # optional allow-list
//	    disabled = ["reindex"]              # optional deny-list
//	  }
//	  config {                              # handed to the plugin as JSON
//	    root = "corpus"
//	    rule "deny" { tool = "delete_*" }
//	  }
//	  sandbox { … }                         # optional: refines the host's default
//	}
//
// # The sandbox block
//
// A sandbox block confines a plugin's process (package confine): once a
// plugin has one, its own or the host block's, it may do nothing but what
// the block allows, besides what every process needs to run (its binary,
// the system's shared libraries, /proc/self, /dev/null, the host's private
// socket folder).
//
//	sandbox {
//	  read     = ["corpus"]                 # files or folders it may read
//	  write    = ["run/audit"]              # ... read and write; a missing one is made as a folder
//	  exec     = ["/usr/bin/node"]          # binaries (or folders of them) it may execute
//	  network  = "none"                     # "none" (default) | "host" | [443, 8080]: TCP connect ports
//	  env      = { LANG = "C.UTF-8" }       # added to its (otherwise empty) environment
//	  user     = "nobody"                   # run as this user (a root host only)
//	  required = false                      # true: refuse to start it unless all of this is enforced
//	  enabled  = true                       # false: no sandbox, whatever the host's default says
//	  limits {
//	    memory     = "256MiB"               # data (heap) size: B, KiB, MiB, GiB, TiB, KB, MB, GB, TB
//	    open_files = 256
//	    processes  = 64                     # processes and threads of its user
//	    cpu        = "60s"                  # CPU time, whole seconds; the kernel kills it past that
//	  }
//	}
//
// A plugin's block refines the host's: each attribute it sets (and each
// limit, and each env key) replaces the default's, the rest is the
// default's. Paths are relative to the file like every path; read and exec
// paths must exist. Parse checks the block; CheckSandboxes holds it up to
// what the kernel supports: a sandbox the kernel can only partly enforce is
// a warning, or an error when it is required.
//
// # The config block as JSON
//
// A plugin's config block is free-form: it becomes one JSON object, built
// the same way at every level:
//
//   - an attribute becomes a key whose value is the attribute's value
//     (evaluated without variables or functions) in go-cty's JSON form:
//     strings, numbers, bools, null, lists as arrays, objects as objects;
//   - the blocks of one type become a key holding an array of objects, one
//     per block in file order, even when there is only one block;
//   - a block's one label, if it has one, is put in its object under the key
//     "name" (so the body must not also set name); more than one label is an
//     error;
//   - a name used both as an attribute and as a block type is an error.
//
// So the example above becomes
//
//	{"root":"corpus","rule":[{"name":"deny","tool":"delete_*"}]}
//
// and a plugin without a config block gets {}. Errors found by the plugin's
// config schema are reported where the offending value was written: the
// instance location /rule/0/tool points at the tool attribute of the first
// rule block, /rule/0/name at its label, a missing key at the block (or
// object) that lacks it.
package deployment
