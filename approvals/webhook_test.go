package approvals

import (
	"context"
	"crypto/hmac"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/plugkit-go/plugkit/shared/identity"
	"github.com/plugkit-go/plugkit/shared/secrets/fake"
)

// TestWebhookSignedAndRetried: the receiver fails twice, then gets a
// notification whose signature it checks with the shared secret; the
// arguments' credential is redacted; text carries the whole message.
func TestWebhookSignedAndRetried(t *testing.T) {
	secret := []byte("shared-secret")
	var tries atomic.Int32
	got := make(chan Notification, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if tries.Add(1) < 3 {
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return
		}
		body, _ := io.ReadAll(r.Body)
		if !hmac.Equal([]byte(r.Header.Get(SignatureHeader)), []byte(Sign(secret, body))) {
			http.Error(w, "bad signature", http.StatusUnauthorized)
			return
		}
		var n Notification
		if err := json.Unmarshal(body, &n); err != nil || r.Header.Get(RequestHeader) != n.Request {
			http.Error(w, "bad body", http.StatusBadRequest)
			return
		}
		got <- n
	}))
	defer srv.Close()
	req := Request{ID: "apr-1", CallID: "c1", Tool: "deploy", Arguments: `{"token":"` + fake.New(1).GitHubToken("ghp_") + `","env":"prod"}`,
		Principal: identity.Principal{ID: "bot", Kind: "agent"}.String(), Route: "oncall", Approvers: []string{"group:oncall"}, Quorum: 1,
		Expires: time.Date(2026, 1, 1, 0, 15, 0, 0, time.UTC)}
	w := &Webhook{URL: srv.URL, Secret: secret, ConsoleURL: "https://console.example/", Attempts: 4, Backoff: time.Millisecond}
	if err := w.Deliver(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	n := <-got
	if tries.Load() != 3 {
		t.Errorf("%d attempts, want 3", tries.Load())
	}
	if strings.Contains(n.Arguments, "ghp_") || !strings.Contains(n.Arguments, `"env":"prod"`) {
		t.Errorf("arguments = %s", n.Arguments)
	}
	if n.Console != "https://console.example/approvals#apr-1" || !strings.Contains(n.Text, "agent:bot wants to call deploy") || !strings.Contains(n.Text, "group:oncall") || strings.Contains(n.Text, "ghp_") {
		t.Errorf("notification = %+v", n)
	}

	// A receiver that never accepts: the delivery fails after its attempts.
	bad := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { http.Error(w, "no", http.StatusInternalServerError) }))
	defer bad.Close()
	w = &Webhook{URL: bad.URL, Secret: secret, Attempts: 2, Backoff: time.Millisecond}
	if err := w.Deliver(context.Background(), req); err == nil || !strings.Contains(err.Error(), "500") {
		t.Errorf("failing receiver: err = %v", err)
	}
}
