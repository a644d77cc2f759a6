package console

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/plugkit-go/plugkit/approvals"
	"github.com/plugkit-go/plugkit/pipeline"
	"github.com/plugkit-go/plugkit/plugins/audit/auditlog"
	"github.com/plugkit-go/plugkit/remote"
	"github.com/plugkit-go/plugkit/shared/identity"
	"github.com/plugkit-go/plugkit/shared/secrets/fake"
)

// writeAuditLog writes a chained audit log of lines to a temp file.
func writeAuditLog(t *testing.T, lines []auditlog.Line) string {
	t.Helper()
	var b []byte
	prev := auditlog.ZeroHash
	for i := range lines {
		l := &lines[i]
		l.Seq = uint64(i + 1)
		l.Time = time.Date(2026, 12, 7, 3, 0, i, 0, time.UTC)
		l.ArgsSHA256 = auditlog.Digest(l.Arguments)
		l.Seal(prev)
		prev = l.Hash
		b = append(append(b, l.Text()...), '\n')
	}
	p := filepath.Join(t.TempDir(), "audit.log")
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// localConsole serves a console whose Local lets in the requests that
// carry the header X-Test-Local (standing for the host's own user).
func localConsole(t *testing.T, auditLog string) *httptest.Server {
	t.Helper()
	con, err := New(Config{Approvals: approvals.New(approvals.Events{}), Status: func() []remote.Status { return nil }, Tools: func() []pipeline.ToolInfo { return nil },
		SignIn: func(context.Context, string) (identity.Principal, error) {
			return identity.Principal{}, errors.New("no credentials here")
		},
		AuditLog: auditLog,
		Local: func(r *http.Request) (identity.Principal, error) {
			if r.Header.Get("X-Test-Local") == "" {
				return identity.Principal{}, errors.New("this connection is from uid 65534")
			}
			return identity.Principal{ID: "op", Kind: "local"}, nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(con)
	t.Cleanup(srv.Close)
	return srv
}

// fetch GETs path with the client, as the host's own user when local.
func fetch(t *testing.T, c *http.Client, url string, local bool) string {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if local {
		req.Header.Set("X-Test-Local", "1")
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// TestAuditPage: the audit page shows the log's lines newest first,
// filtered by tool (a name or a glob), principal and outcome, with every
// credential in the arguments replaced by its marker.
func TestAuditPage(t *testing.T) {
	token := fake.New(2).GitHubToken("ghp_")
	log := writeAuditLog(t, []auditlog.Line{
		{ID: "c1", Caller: "mcp#1", Principal: "ci-bot", PrincipalKind: "agent", Tool: "read_file", OK: true, Arguments: json.RawMessage(`{"path":"a.md"}`)},
		{ID: "c2", Caller: "mcp#1", Principal: "ci-bot", PrincipalKind: "agent", Tool: "delete_file", Code: "DENIED", DecidedBy: "host", Arguments: json.RawMessage(`{"path":"b.md"}`),
			Approval: json.RawMessage(`{"id":"apr-1","route":"oncall","state":"denied"}`)},
		{ID: "c3", Caller: "cli", Principal: "op", PrincipalKind: "local", Tool: "deploy_web", OK: true, Arguments: json.RawMessage(`{"token":"` + token + `"}`)},
		{ID: "c4", Caller: "cli", Principal: "op", PrincipalKind: "local", Tool: "deploy_db", Code: "TOOL_ERROR"},
	})
	srv := localConsole(t, log)
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar}
	page := fetch(t, c, srv.URL+"/audit", true)
	if strings.Contains(page, token) || !strings.Contains(page, "[redacted: github") {
		t.Errorf("the credential is not hidden:\n%s", page)
	}
	if !strings.Contains(page, `href="/audit" class="here"`) {
		t.Error("the nav does not mark the audit page")
	}
	order := []string{"deploy_db", "deploy_web", "delete_file", "read_file"}
	last := -1
	for _, tool := range order {
		i := strings.Index(page, `<span class="tool">`+tool+`<`)
		if i < 0 || i < last {
			t.Fatalf("lines not all shown newest first (%s at %d):\n%s", tool, i, page)
		}
		last = i
	}
	if !strings.Contains(page, "route oncall") {
		t.Error("the routed call's approval route is not shown")
	}
	for _, tc := range []struct {
		query string
		want  []string
	}{
		{"tool=delete_file", []string{"delete_file"}},
		{"tool=deploy_*", []string{"deploy_db", "deploy_web"}},
		{"principal=agent:ci-bot", []string{"delete_file", "read_file"}},
		{"outcome=ok", []string{"deploy_web", "read_file"}},
		{"outcome=DENIED", []string{"delete_file"}},
		{"outcome=failed&principal=local:op", []string{"deploy_db"}},
		{"tool=nothing", nil},
	} {
		page := fetch(t, c, srv.URL+"/audit?"+tc.query, true)
		var got []string
		for _, tool := range order {
			if strings.Contains(page, `<span class="tool">`+tool+`<`) {
				got = append(got, tool)
			}
		}
		if strings.Join(got, ",") != strings.Join(tc.want, ",") {
			t.Errorf("%s: shows %q, want %q", tc.query, got, tc.want)
		}
	}
}

// TestAuditPageWithoutLog says where to name the log.
func TestAuditPageWithoutLog(t *testing.T) {
	srv := localConsole(t, "")
	page := fetch(t, &http.Client{}, srv.URL+"/audit", true)
	if !strings.Contains(page, "audit_log") {
		t.Errorf("page without a log:\n%s", page)
	}
	srv2 := localConsole(t, filepath.Join(t.TempDir(), "missing.log"))
	if page := fetch(t, &http.Client{}, srv2.URL+"/audit", true); !strings.Contains(page, "cannot read the audit log") {
		t.Errorf("page of a missing log:\n%s", page)
	}
}
