package host

import (
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/plugkit-go/plugkit/deployment"
)

// The names a reload reports are the file's: each field of the host block
// by its name in the file. A field added to deployment.Host fails here
// until its name is checked.
func TestSettingNames(t *testing.T) {
	want := map[string]string{
		"AdminSocket": "admin_socket", "AutoMTLS": "auto_mtls",
		"MaxMessageBytes": "max_message_bytes", "MaxResultBytes": "max_result_bytes",
		"LogLevel": "log_level", "ApprovalTimeout": "approval_timeout",
		"ListenerTimeout": "listener_timeout", "StartTimeout": "start_timeout",
		"DrainTimeout": "drain_timeout", "ShutdownTimeout": "shutdown_timeout",
		"MCP": "mcp", "Metrics": "metrics", "MetricsPublic": "metrics_public",
		"MCPMaxSessions": "mcp_max_sessions", "MCPIdleTimeout": "mcp_idle_timeout",
		"MCPMaxConnsPerPeer": "mcp_max_conns_per_peer", "Policy": "policy",
		"Sandbox": "sandbox", "Tracing": "tracing", "MCPTLS": "mcp_tls",
		"MCPAuth": "mcp_auth", "Receipts": "receipts",
		"MaxArgumentBytes": "max_argument_bytes", "MCPAllowedOrigins": "mcp_allowed_origins", "MCPStateKey": "mcp_state_key",
		"MCPToolSearch": "mcp_tool_search", "MCPToolSearchOver": "mcp_tool_search_over",
		"EgressResolver": "egress_resolver", "ReceiptsFrom": "receipts_from",
		"ReceiptsFromRange": "receipts_from_range", // never reported: see below
		"RunDir":            "run_dir", "ExplainOnly": "explain_only", "MaxDescriptionBytes": "max_description_bytes",
		"UserConsent": "user_consent", "ApprovalStore": "approval_store", "ApprovalLeaseTTL": "approval_lease_ttl",
	}
	typ := reflect.TypeOf(deployment.Host{})
	for i := 0; i < typ.NumField(); i++ {
		f := typ.Field(i).Name
		w, ok := want[f]
		if !ok {
			t.Errorf("deployment.Host.%s: no name checked here; add it", f)
			continue
		}
		if got := settingName(f); got != w {
			t.Errorf("settingName(%s) = %q, want %q", f, got, w)
		}
	}
}

func TestChangedHostSettings(t *testing.T) {
	a := deployment.Host{MCP: "127.0.0.1:8765", DrainTimeout: 5 * time.Second, LogLevel: "info"}
	if got := changedHostSettings(a, a); len(got) != 0 {
		t.Fatalf("same host block: %v changed", got)
	}
	moved := a
	moved.ReceiptsFromRange.Start.Line = 12
	if got := changedHostSettings(a, moved); len(got) != 0 {
		t.Fatalf("a setting written on another line: %v changed", got)
	}
	b := a
	b.MCP, b.DrainTimeout = "127.0.0.1:9000", time.Second
	b.Sandbox = &deployment.Sandbox{} // in each plugin's spec: a plugin reload, not a restart
	got := changedHostSettings(a, b)
	if !slices.Equal(got, []string{"drain_timeout", "mcp"}) {
		t.Fatalf("changed: %v, want [drain_timeout mcp] in the file's order", got)
	}
}
