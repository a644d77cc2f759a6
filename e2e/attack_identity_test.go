package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/plugkit-go/plugkit/internal/testkit/testissuer"
)

// TestAttackMalformedGroupsClaim: a token whose groups claim is an object
// (or a list holding a non-string) slipped past a `callers =
// ["group:readers"]` deny rule, read as "no groups". Such a token is now
// refused with 401 before the pipeline, counted in
// plugkit_mcp_auth_refusals_total, and never reaches the audit log.
func TestAttackMalformedGroupsClaim(t *testing.T) {
	needShippedDeployment(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	iss := testissuer.Start(t)
	dir := t.TempDir()
	addr := freeLoopbackAddr(t)
	metricsAddr := freePort(t)
	audience := "http://" + addr + "/mcp"
	config := deploymentFileWith(t, dir, deploymentTweaks{
		host: fmt.Sprintf("  metrics = %q\n  mcp = %q\n  mcp_auth {\n    oauth {\n      issuer   = %q\n      jwks_url = %q\n      audience = %q\n    }\n  }\n", metricsAddr, addr, iss.URL, iss.JWKSURL, audience),
		safetyRules: `    deny "readers-list" {
      tools   = ["list_dir"]
      callers = ["group:readers"]
    }
`,
	})
	running := startHost(t, config, len(shippedPlugins))

	// A well-formed token of a reader is denied by the rule, as before.
	client := mcp.NewClient(&mcp.Implementation{Name: "reader", Version: "1"}, nil)
	good := iss.Token(t, jwt.MapClaims{"sub": "rita", "aud": audience, "groups": []string{"readers"}})
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: audience,
		HTTPClient: &http.Client{Transport: bearer{good, http.DefaultTransport}}}, nil)
	if err != nil {
		t.Fatalf("connect: %v\n%s", err, running.stderr)
	}
	defer cs.Close()
	// Hidden from readers: the rule denies them every call of it.
	waitTools(t, ctx, cs, "read_file")
	mcpHidden(t, ctx, cs, "list_dir", `{"path":"."}`)

	for _, c := range []struct {
		name   string
		groups any
	}{
		{"an object", map[string]any{"readers": true}},
		{"a list with an object", []any{map[string]any{"name": "readers"}}},
		{"a number", 7},
		{"null", nil},
	} {
		claims := jwt.MapClaims{"sub": "mallory", "aud": audience, "groups": c.groups}
		client := mcp.NewClient(&mcp.Implementation{Name: "mallory", Version: "1"}, nil)
		ms, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: audience,
			HTTPClient: &http.Client{Transport: bearer{iss.Token(t, claims), http.DefaultTransport}}}, nil)
		if err == nil {
			r := mcpCall(t, ctx, ms, "list_dir", `{"path":"."}`)
			ms.Close()
			t.Fatalf("groups as %s: the token was accepted; list_dir: isError %v %q", c.name, r.IsError, toolText(r))
		}
		req, _ := http.NewRequest("POST", audience, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer "+iss.Token(t, claims))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
		resp.Body.Close()
		body := string(b)
		if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(body, `"groups" claim`) {
			t.Errorf("groups as %s: %d %q, want 401 naming the claim", c.name, resp.StatusCode, body)
		}
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(scrape(t, metricsAddr)))
	if err != nil {
		t.Fatal(err)
	}
	// Each case: the SDK client's refused connect, then the plain request.
	if got, _ := value(families, "plugkit_mcp_auth_refusals_total", map[string]string{"reason": "invalid"}); got < 4 {
		t.Errorf("refusals for an invalid credential: %v, want at least 4", got)
	}
	log := waitAuditLines(t, filepath.Join(dir, "run", "audit", "audit.log"), 1)
	if strings.Contains(log, "mallory") {
		t.Errorf("a token with a malformed groups claim reached the pipeline:\n%s", log)
	}
}
