package authn

import (
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/plugkit-go/plugkit/shared/identity"
)

// TestLocalRefusesPlugins: a connection of the host's user is served only
// when its vetting passes; a plugin is refused with 403 and its reason
// counted, another user with 401, and a failed vetting never serves.
func TestLocalRefusesPlugins(t *testing.T) {
	for _, tc := range []struct {
		name   string
		peer   LocalPeer
		err    error
		code   int
		reason string
	}{
		{name: "owner", peer: LocalPeer{UID: 1000, Vet: func() error { return nil }}, code: http.StatusOK},
		{name: "plugin", peer: LocalPeer{UID: 1000, Vet: func() error {
			return &PeerRefusal{Reason: "plugin", Err: errors.New("this connection is from a plugin")}
		}}, code: http.StatusForbidden, reason: "plugin"},
		{name: "unknown process", peer: LocalPeer{UID: 1000, Vet: func() error { return errors.New("gone") }}, code: http.StatusForbidden, reason: "unknown_process"},
		{name: "other user", peer: LocalPeer{UID: 65534, Vet: func() error { t.Error("another user's process was vetted"); return nil }}, code: http.StatusUnauthorized, reason: "other_user"},
		{name: "lookup failed", err: errors.New("no table"), code: http.StatusUnauthorized, reason: "unknown_user"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var refused []string
			l := &Local{UID: 1000,
				Peer:      func(net.Conn) (LocalPeer, error) { return tc.peer, tc.err },
				Principal: func(uid int) identity.Principal { return identity.Principal{ID: "local:me", Kind: "local"} },
				OnRefused: func(r string) { refused = append(refused, r) },
			}
			srv := httptest.NewUnstartedServer(l.Require(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				io.WriteString(w, "served")
			})))
			srv.Config.ConnContext = l.ConnContext
			srv.Start()
			defer srv.Close()
			resp, err := http.Get(srv.URL)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.code {
				t.Fatalf("status %d (%s), want %d", resp.StatusCode, b, tc.code)
			}
			if tc.reason != "" && (len(refused) != 1 || refused[0] != tc.reason) {
				t.Errorf("refusals %v, want [%s]", refused, tc.reason)
			}
			if tc.code == http.StatusForbidden && !strings.Contains(string(b), "no plugin of a host") {
				t.Errorf("the refusal does not say why: %s", b)
			}
		})
	}
}
