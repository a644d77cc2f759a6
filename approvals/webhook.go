package approvals

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/plugkit-go/plugkit/shared/secrets"
)

// The headers of a webhook notification: the body's HMAC-SHA256 under the
// route's secret ("sha256=" and lowercase hex, as GitHub's webhooks
// spell it), and the request's id.
const (
	SignatureHeader = "X-Plugkit-Signature-256"
	RequestHeader   = "X-Plugkit-Request"
)

// Notification is the JSON body a route's webhook receives for each new
// request. Text is the whole of it as one line, so that a Slack-style
// incoming webhook shows it as it is.
type Notification struct {
	Request   string    `json:"request"`
	CallID    string    `json:"call_id"`
	Tool      string    `json:"tool"`
	Arguments string    `json:"arguments"` // credentials replaced by markers
	Principal string    `json:"principal"`
	Caller    string    `json:"caller"`
	Route     string    `json:"route"`
	Approvers []string  `json:"approvers"`
	Quorum    int       `json:"quorum"`
	Expires   time.Time `json:"expires"`
	Console   string    `json:"console,omitempty"`
	Text      string    `json:"text"`
}

// Webhook delivers notifications to one URL, signed, retrying with
// backoff.
type Webhook struct {
	URL        string
	Secret     []byte
	ConsoleURL string
	Client     *http.Client
	// Attempts and Backoff: each failed delivery waits Backoff, doubling,
	// before the next, up to Attempts in all.
	Attempts int
	Backoff  time.Duration
}

var scan = secrets.New(nil)

// NotificationOf is what a webhook sends for r.
func NotificationOf(r Request, consoleURL string) Notification {
	args := r.Arguments
	if red, _, err := scan.RedactJSON([]byte(args)); err == nil {
		args = string(red)
	} else {
		args = "(not shown: " + err.Error() + ")"
	}
	n := Notification{Request: r.ID, CallID: r.CallID, Tool: r.Tool, Arguments: args, Principal: r.Principal, Caller: r.Caller,
		Route: r.Route, Approvers: r.Approvers, Quorum: r.Quorum, Expires: r.Expires}
	if consoleURL != "" {
		n.Console = strings.TrimSuffix(consoleURL, "/") + "/approvals#" + r.ID
	}
	n.Text = fmt.Sprintf("%s wants to call %s %s: approval needed from %s (%d of them) by %s, request %s",
		r.Principal, r.Tool, args, strings.Join(r.Approvers, " or "), n.Quorum, r.Expires.UTC().Format(time.RFC3339), r.ID)
	if n.Console != "" {
		n.Text += " " + n.Console
	}
	return n
}

// Sign is the signature header's value for body under secret.
func Sign(secret, body []byte) string {
	m := hmac.New(sha256.New, secret)
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// Deliver posts r's notification until one attempt is answered 2xx, the
// attempts run out, or ctx ends; it returns the last failure.
func (w *Webhook) Deliver(ctx context.Context, r Request) error {
	body, err := json.Marshal(NotificationOf(r, w.ConsoleURL))
	if err != nil {
		return err
	}
	client := w.Client
	if client == nil {
		client = &http.Client{Timeout: 10 * time.Second}
	}
	attempts, backoff := max(w.Attempts, 1), w.Backoff
	if backoff <= 0 {
		backoff = time.Second
	}
	sig := Sign(w.Secret, body)
	for i := 0; ; i++ {
		err = w.post(ctx, client, body, sig, r.ID)
		if err == nil || i+1 >= attempts {
			return err
		}
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%w (gave up: %v)", err, ctx.Err())
		case <-t.C:
		}
		backoff *= 2
	}
}

func (w *Webhook) post(ctx context.Context, client *http.Client, body []byte, sig, id string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.URL, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(SignatureHeader, sig)
	req.Header.Set(RequestHeader, id)
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("webhook %s: %w", w.URL, err)
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("webhook %s: answered %s", w.URL, resp.Status)
	}
	return nil
}

// Notifier runs deliveries in the background until Close, which cancels
// those still retrying and waits for them.
type Notifier struct {
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// NewNotifier returns a running notifier.
func NewNotifier() *Notifier {
	ctx, cancel := context.WithCancel(context.Background())
	return &Notifier{ctx: ctx, cancel: cancel}
}

// Go delivers r through w in the background; failed, when the delivery
// fails for good, is told why.
func (n *Notifier) Go(w *Webhook, r Request, failed func(error)) {
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		if err := w.Deliver(n.ctx, r); err != nil && failed != nil {
			failed(err)
		}
	}()
}

// Close stops the deliveries and waits for them.
func (n *Notifier) Close() {
	n.cancel()
	n.wg.Wait()
}
