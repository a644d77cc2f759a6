package mcpserver_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/plugkit-go/plugkit/internal/testkit/testkit"
	"github.com/plugkit-go/plugkit/mcpserver"
)

// postRaw posts body on session (none: "") with an Origin header (none:
// "") and returns the status and the JSON-RPC message of the answer (the
// data of its SSE event, or its JSON body).
func postRaw(t *testing.T, endpoint, session, origin, body string) (int, string, *http.Response) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, endpoint, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if origin != "" {
		req.Header.Set("Origin", origin)
	}
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	}
	c := &http.Client{Transport: &http.Transport{}, Timeout: 30 * time.Second}
	defer c.CloseIdleConnections()
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	msg := string(b)
	if i := strings.Index(msg, "data: "); i >= 0 {
		msg = msg[i+len("data: "):]
		if j := strings.Index(msg, "\n"); j >= 0 {
			msg = msg[:j]
		}
	}
	return resp.StatusCode, strings.TrimSpace(msg), resp
}

const initBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`

func openSession(t *testing.T, endpoint string) string {
	t.Helper()
	code, msg, resp := postRaw(t, endpoint, "", "", initBody)
	id := resp.Header.Get("Mcp-Session-Id")
	if code != http.StatusOK || id == "" {
		t.Fatalf("initialize: %d %s", code, msg)
	}
	postRaw(t, endpoint, id, "", `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return id
}

// TestOrigin: on a loopback listener, requests without Origin or with a
// loopback one are served, a foreign one is refused 403 before anything
// else looks at it, and one of AllowedOrigins is served.
func TestOrigin(t *testing.T) {
	leakCheck(t)
	f := newFixtureWith(t, time.Minute, mcpserver.Options{AllowedOrigins: []string{"https://app.example"}})
	endpoint := serveHTTP(t, f.srv)
	for _, tc := range []struct {
		origin string
		ok     bool
	}{
		{"", true},
		{"http://localhost:3000", true},
		{"http://127.0.0.1", true},
		{"http://[::1]:8080", true},
		{"https://APP.example", true},
		{"https://evil.example", false},
		{"http://localhost.evil.example", false},
		{"null", false},
		{"https://app.example.evil", false},
	} {
		code, msg, _ := postRaw(t, endpoint, "", tc.origin, initBody)
		if tc.ok != (code == http.StatusOK) || (!tc.ok && code != http.StatusForbidden) {
			t.Errorf("Origin %q: %d %.200s; want served: %v (403 otherwise)", tc.origin, code, msg, tc.ok)
		}
	}
}

// TestExactIDs: a numeric id the SDK would change (too large for an int64,
// a fraction, an exponent, past 2^53) comes back exactly as written; the
// others as before.
func TestExactIDs(t *testing.T) {
	leakCheck(t)
	f := newFixture(t, time.Minute)
	endpoint := serveHTTP(t, f.srv)
	session := openSession(t, endpoint)
	for _, id := range []string{"1e30", "1.5", "-0", "9007199254740993", "1E2", "-12", "7", `"abc"`, `"plugkit-id-x-0"`, "0"} {
		code, msg, _ := postRaw(t, endpoint, session, "", `{"jsonrpc":"2.0","id":`+id+`,"method":"ping"}`)
		if code != http.StatusOK {
			t.Errorf("ping with id %s: %d %s", id, code, msg)
			continue
		}
		var got struct {
			ID json.RawMessage `json:"id"`
		}
		if err := json.Unmarshal([]byte(msg), &got); err != nil {
			t.Errorf("ping with id %s: answer %q: %v", id, msg, err)
			continue
		}
		if !bytes.Equal(got.ID, []byte(id)) {
			t.Errorf("ping with id %s: the answer's id is %s", id, got.ID)
		}
	}
}

// TestExactIDsStdio: over stdio too, an id the SDK would change comes
// back as written.
func TestExactIDsStdio(t *testing.T) {
	leakCheck(t)
	f := newFixture(t, time.Minute)
	ctx := testkit.Context(t)
	in, toServer := io.Pipe()
	fromServer, out := io.Pipe()
	served := make(chan error, 1)
	go func() { served <- f.srv.ServeStdio(ctx, in, out); out.Close() }()
	lines := bufio.NewReader(fromServer)
	send := func(msg string) string {
		t.Helper()
		if _, err := io.WriteString(toServer, msg+"\n"); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(msg, `"id"`) {
			return ""
		}
		line, err := lines.ReadString('\n')
		if err != nil {
			t.Fatalf("reading the answer to %s: %v", msg, err)
		}
		return line
	}
	send(initBody)
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	for _, id := range []string{"1e30", "1.5", "12"} {
		line := send(`{"jsonrpc":"2.0","id":` + id + `,"method":"ping"}`)
		var got struct {
			ID json.RawMessage `json:"id"`
		}
		if err := json.Unmarshal([]byte(line), &got); err != nil || string(got.ID) != id {
			t.Errorf("ping with id %s over stdio: answer %q", id, line)
		}
	}
	toServer.Close()
	if err := <-served; err != nil {
		t.Errorf("ServeStdio: %v", err)
	}
}
