package e2e

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/plugkit-go/plugkit/admin"
	"github.com/plugkit-go/plugkit/plugins/audit/auditlog"
)

// TestSafetyRuleModeShadowEndToEnd, through the real binaries and over MCP
// with two API keys: a safety deny rule marked mode = "shadow" in the
// plugin's own configuration, with enforce_for = ["group:canary"], is put
// in shadow by the host as a deployment's shadow block would be. For a
// key outside the canary the tool stays listed and its calls run, their
// audit lines carry what the rule would have decided (and the log
// verifies), the metric counts them and explain shows them; for the
// canary's key the rule is enforced (the tool is hidden: the rule denies
// its every call). Marked enforce again and reloaded, the rule applies to
// everyone.
func TestSafetyRuleModeShadowEndToEnd(t *testing.T) {
	needShippedDeployment(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dir := t.TempDir()
	keysFile := filepath.Join(dir, "keys.hcl")
	newKey := func(name string, args ...string) string {
		out, stderr, code := cli(t, append([]string{"key", "add", name, "-f", keysFile}, args...)...)
		if code != 0 || !strings.HasPrefix(out, "pk_") {
			t.Fatalf("host key add %s: exit %d %q %s", name, code, out, stderr)
		}
		return strings.TrimSpace(out)
	}
	canaryKey := newKey("ann", "--attribute", "group:canary")
	otherKey := newKey("bob", "--attribute", "group:writers")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	metricsAddr := freePort(t)
	rule := func(mode string) string {
		return fmt.Sprintf(`    deny "no-list" {
      tools       = ["list_dir"]
      reason      = "listing is being retired"
%s    }
`, mode)
	}
	tw := deploymentTweaks{
		host:        fmt.Sprintf("  metrics = %q\n  mcp = \"127.0.0.1:%d\"\n  mcp_auth {\n    keys = %q\n  }\n", metricsAddr, port, keysFile),
		safetyRules: rule("      mode        = \"shadow\"\n      enforce_for = [\"group:canary\"]\n"),
	}
	config := deploymentFileWith(t, dir, tw)
	h := startFaultHostWith(t, dir, config)
	endpoint := fmt.Sprintf("http://127.0.0.1:%d/mcp", port)
	transport := http.DefaultTransport.(*http.Transport).Clone()
	defer transport.CloseIdleConnections()
	connect := func(key string) *mcp.ClientSession {
		t.Helper()
		client := mcp.NewClient(&mcp.Implementation{Name: "shadow-agent", Version: "1"}, nil)
		cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: endpoint,
			HTTPClient: &http.Client{Transport: bearer{key, transport}}}, nil)
		if err != nil {
			t.Fatalf("connect: %v\n%s", err, h.run.stderr)
		}
		t.Cleanup(func() { cs.Close() })
		return cs
	}

	// Outside the canary: listed, and the calls run.
	other := connect(otherKey)
	waitTools(t, ctx, other, "list_dir", "read_file")
	for range 3 {
		if r := mcpCall(t, ctx, other, "list_dir", `{"path":"."}`); r.IsError {
			t.Fatalf("bob's list_dir with its rule in shadow: %s", toolText(r))
		}
	}
	// The canary: enforced, so hidden (it denies every call of list_dir).
	canary := connect(canaryKey)
	waitTools(t, ctx, canary, "read_file")
	mcpHidden(t, ctx, canary, "list_dir", `{"path":"."}`)

	// Explain, for each principal.
	for _, tc := range []struct {
		as      admin.Principal
		outcome string
		shadow  bool
	}{
		{admin.Principal{ID: "bob", Kind: "agent", Attributes: []string{"group:writers"}}, "ALLOWED", true},
		{admin.Principal{ID: "ann", Kind: "agent", Attributes: []string{"group:canary"}}, "DENIED", false},
	} {
		x, err := h.client.Explain(ctx, admin.ExplainRequest{Tool: "list_dir", Arguments: []byte(`{"path":"."}`), As: &tc.as})
		if err != nil {
			t.Fatal(err)
		}
		if x.Outcome != tc.outcome || (len(x.Shadow) == 1) != tc.shadow || (tc.shadow && x.Shadow[0].Rule != "no-list") || (!tc.shadow && x.Rule != "no-list") {
			t.Errorf("explain list_dir for %s: %s by %s rule %q, shadow %+v", tc.as.ID, x.Outcome, x.DecidedBy, x.Rule, x.Shadow)
		}
	}

	logPath := filepath.Join(dir, "run", "audit", "audit.log")
	var shadowed int
	for _, text := range strings.Split(strings.TrimSpace(waitAuditLines(t, logPath, 4)), "\n") {
		l, err := auditlog.ParseLine([]byte(text))
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case l.Tool == "list_dir" && l.Principal == "bob":
			want := []auditlog.Shadow{{Stage: 2, Plugin: "safety", Rule: "no-list", Would: "DENIED",
				Reason: `denied by safety rule "no-list": listing is being retired (tool "list_dir" matches "list_dir")`}}
			if !l.OK || fmt.Sprint(l.Shadow) != fmt.Sprint(want) {
				t.Errorf("audit line %d: ok %v, shadow %+v, want %+v", l.Seq, l.OK, l.Shadow, want)
			}
			shadowed++
		case l.Shadow != nil:
			t.Errorf("audit line %d (%s for %s, %s): shadow %+v", l.Seq, l.Tool, l.Principal, l.Code, l.Shadow)
		case l.Principal == "ann" && (l.OK || !slices.Equal(l.PrincipalAttributes, []string{"group:canary"})):
			t.Errorf("audit line %d: the canary's %s ran or lacks its group: %s", l.Seq, l.Tool, text)
		}
	}
	if shadowed != 3 {
		t.Errorf("%d audit lines with a shadow decision, want 3", shadowed)
	}
	if out, stderr, code := auditCmd(t, "verify", logPath); code != 0 {
		t.Errorf("audit verify: exit %d %s %s", code, out, stderr)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(scrape(t, metricsAddr)))
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := value(families, "plugkit_shadow_decisions_total", map[string]string{"plugin": "safety", "rule": "no-list", "would": "DENIED"}); v != 3 {
		t.Errorf("plugkit_shadow_decisions_total{safety,no-list,DENIED} = %v, want 3", v)
	}

	// Enforced for everyone: the plugin is applied again without the
	// shadow mark, and nothing of it stays in shadow.
	tw.safetyRules = rule("      mode        = \"enforce\"\n")
	deploymentFileWith(t, dir, tw)
	if _, stderr, code := cli(t, "reload", "-c", config); code != 0 {
		t.Fatalf("reload: exit %d %s", code, stderr)
	}
	x, err := h.client.Explain(ctx, admin.ExplainRequest{Tool: "list_dir", Arguments: []byte(`{"path":"."}`),
		As: &admin.Principal{ID: "bob", Kind: "agent", Attributes: []string{"group:writers"}}})
	if err != nil {
		t.Fatal(err)
	}
	if x.Outcome != "DENIED" || x.Rule != "no-list" || len(x.Shadow) != 0 {
		t.Errorf("explain for bob once enforced: %s rule %q shadow %+v", x.Outcome, x.Rule, x.Shadow)
	}
	mcpHidden(t, ctx, connect(otherKey), "list_dir", `{"path":"."}`)
}
