package console

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/plugkit-go/plugkit/approvals"
	"github.com/plugkit-go/plugkit/pipeline"
	"github.com/plugkit-go/plugkit/remote"
	"github.com/plugkit-go/plugkit/shared/identity"
	"github.com/plugkit-go/plugkit/shared/secrets/fake"
)

// TestPendingArgumentsRedacted: a credential in a pending call's
// arguments is shown as its marker, never as itself; a session expires.
func TestPendingArgumentsRedacted(t *testing.T) {
	svc := approvals.New(approvals.Events{})
	ctx, cancel := context.WithCancel(context.Background())
	parked := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = svc.Ask(ctx, approvals.Route{Name: "oncall", Approvers: []string{"user:ann"}, Quorum: 1, Timeout: time.Minute},
			approvals.Call{ID: "c1", Tool: "deploy", Arguments: `{"token":"` + fake.New(1).GitHubToken("ghp_") + `"}`, Principal: identity.Principal{ID: "bot", Kind: "agent"}},
			func(approvals.Request) { close(parked) })
	}()
	<-parked
	defer func() { cancel(); <-done }()
	con, err := New(Config{Approvals: svc, Status: func() []remote.Status { return nil }, Tools: func() []pipeline.ToolInfo { return nil },
		SessionTTL: 200 * time.Millisecond,
		SignIn: func(_ context.Context, c string) (identity.Principal, error) {
			if c != "good" {
				return identity.Principal{}, errors.New("unknown")
			}
			return identity.Principal{ID: "ann", Kind: "user"}, nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(con)
	defer srv.Close()
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar}
	get := func(path string) string {
		resp, err := c.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	tok := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindStringSubmatch(get("/signin"))[1]
	if _, err := c.PostForm(srv.URL+"/signin", url.Values{"credential": {"good"}, "csrf": {tok}}); err != nil {
		t.Fatal(err)
	}
	page := get("/approvals")
	if strings.Contains(page, "ghp_") || !strings.Contains(page, "deploy") {
		t.Fatalf("approvals page:\n%s", page)
	}
	time.Sleep(300 * time.Millisecond) // past SessionTTL
	if page := get("/approvals"); !strings.Contains(page, `id="credential"`) {
		t.Errorf("an expired session still sees the approvals page")
	}
	srv.CloseClientConnections()
}
