package mcpserver_test

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/plugkit-go/plugkit/internal/testkit/testkit"
	"github.com/plugkit-go/plugkit/pipeline"
)

// cancelledCall is the wait tool called with an id the SDK would change,
// then cancelled by that id as the client wrote it: the tool's context
// must end and the call be recorded ABORTED. Before, the cancellation
// named no request the SDK knew (it knew the placeholder), and the call
// ran on.
const cancelledID = "1e30"

func wantCancelled(t *testing.T, f *fixture) {
	t.Helper()
	select {
	case <-f.demo.cancelled:
	case <-time.After(10 * time.Second):
		t.Fatalf("notifications/cancelled for id %s did not cancel the call", cancelledID)
	}
	if rec := f.audit.waitFor(t, "wait"); rec.Code != pipeline.CodeAborted {
		t.Errorf("pipeline outcome %+v, want ABORTED", rec)
	}
}

// TestCancelExactID: over streamable HTTP.
func TestCancelExactID(t *testing.T) {
	leakCheck(t)
	f := newFixture(t, time.Minute)
	endpoint := serveHTTP(t, f.srv)
	session := openSession(t, endpoint)
	ctx, cancel := context.WithCancel(testkit.Context(t))
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint,
			strings.NewReader(`{"jsonrpc":"2.0","id":`+cancelledID+`,"method":"tools/call","params":{"name":"wait","arguments":{}}}`))
		if err != nil {
			return
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Session-Id", session)
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
		c := &http.Client{Transport: &http.Transport{}}
		defer c.CloseIdleConnections()
		if resp, err := c.Do(req); err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}()
	select {
	case <-f.demo.started:
	case <-ctx.Done():
		t.Fatal("the tool did not start")
	}
	if code, msg, _ := postRaw(t, endpoint, session, "", `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":`+cancelledID+`,"reason":"changed my mind"}}`); code != http.StatusAccepted {
		t.Errorf("notifications/cancelled: %d %s", code, msg)
	}
	wantCancelled(t, f)
	cancel()
	<-done
}

// TestCancelExactIDStdio: over stdio.
func TestCancelExactIDStdio(t *testing.T) {
	leakCheck(t)
	f := newFixture(t, time.Minute)
	ctx := testkit.Context(t)
	in, toServer := io.Pipe()
	fromServer, out := io.Pipe()
	served := make(chan error, 1)
	go func() { served <- f.srv.ServeStdio(ctx, in, out); out.Close() }()
	lines := bufio.NewReader(fromServer)
	read := make(chan string, 8)
	go func() {
		for {
			line, err := lines.ReadString('\n')
			if err != nil {
				close(read)
				return
			}
			read <- line
		}
	}()
	send := func(msg string) {
		t.Helper()
		if _, err := io.WriteString(toServer, msg+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	send(initBody)
	<-read
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	send(`{"jsonrpc":"2.0","id":` + cancelledID + `,"method":"tools/call","params":{"name":"wait","arguments":{}}}`)
	select {
	case <-f.demo.started:
	case <-ctx.Done():
		t.Fatal("the tool did not start")
	}
	send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":` + cancelledID + `}}`)
	wantCancelled(t, f)
	toServer.Close()
	if err := <-served; err != nil {
		t.Errorf("ServeStdio: %v", err)
	}
	for range read { // to the end, so the reader goroutine ends
	}
}
