package console

import (
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"
)

// TestLocalUserSignedIn: the host's own user is let in without a
// credential; anyone else gets the sign-in form; the local user's cookie
// sent by someone else is not a session; a request naming the console by
// a name other than loopback or localhost (a DNS rebinding) is not let in;
// a form of a session just made is refused without its token.
func TestLocalUserSignedIn(t *testing.T) {
	srv := localConsole(t, "")
	jar, _ := cookiejar.New(nil)
	local := &http.Client{Jar: jar}
	if page := fetch(t, local, srv.URL+"/approvals", true); !strings.Contains(page, "local:op") || strings.Contains(page, `id="credential"`) {
		t.Fatalf("the host's user is not let in:\n%s", page)
	}
	if page := fetch(t, &http.Client{}, srv.URL+"/approvals", false); !strings.Contains(page, `id="credential"`) {
		t.Errorf("another user is not sent to the sign-in form:\n%s", page)
	}
	// The same cookie jar, not from the host's user.
	if page := fetch(t, local, srv.URL+"/tools", false); !strings.Contains(page, `id="credential"`) {
		t.Errorf("the local user's cookie let another user in:\n%s", page)
	}
	u, _ := url.Parse(srv.URL)
	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/approvals", nil)
	req.Host = "rebound.example:" + u.Port()
	req.Header.Set("X-Test-Local", "1")
	resp, err := (&http.Client{}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.Request.URL.Path != "/signin" {
		t.Errorf("a request for host rebound.example ended at %s, want the sign-in form", resp.Request.URL.Path)
	}
	// A POST does not sign in: it has no token of a session.
	post, _ := http.NewRequest(http.MethodPost, srv.URL+"/approvals/apr-x/approve", strings.NewReader("csrf=x"))
	post.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	post.Header.Set("X-Test-Local", "1")
	resp, err = (&http.Client{}).Do(post)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("a form posted by the local user without a session: %d, want 401", resp.StatusCode)
	}
	for _, tc := range []struct {
		host string
		want bool
	}{{"127.0.0.1:8444", true}, {"[::1]:8444", true}, {"localhost:8444", true}, {"LOCALHOST", true}, {"127.9.9.9", true}, {"evil.example:8444", false}, {"10.0.0.1:8444", false}, {"", false}} {
		if got := loopbackHost(tc.host); got != tc.want {
			t.Errorf("loopbackHost(%q) = %v", tc.host, got)
		}
	}
}
