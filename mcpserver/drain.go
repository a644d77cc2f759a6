package mcpserver

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/plugkit-go/plugkit/host"
)

// posts counts the POST requests being served: a call's answer is written
// after the host has ended the call, so a drain must wait for the request,
// not only the call, or the client loses an answer the host produced.
type posts struct {
	mu sync.Mutex
	n  int
}

func (p *posts) add(d int) {
	p.mu.Lock()
	p.n += d
	p.mu.Unlock()
}

func (p *posts) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.n
}

// refuseWhileDraining answers 503 to a request that would start a new
// streamable HTTP session (a POST without Mcp-Session-Id) once the host
// drains: the client is better served by another replica. Requests of the
// sessions already open go through; their new calls are refused by the
// host, their calls in flight finish. Every POST is counted while served.
func (s *Server) refuseWhileDraining(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			next.ServeHTTP(w, r)
			return
		}
		if r.Header.Get(sessionHeader) == "" && s.h.Draining() {
			w.Header().Set("Connection", "close")
			http.Error(w, "no new MCP session: "+host.DrainingMessage, http.StatusServiceUnavailable)
			return
		}
		if r.Header.Get(protocolHeader) >= newProtocol && s.listens(r) {
			// A 2026-07-28 client's stream of notifications carries no
			// call's answer; Shutdown ends it.
			next.ServeHTTP(w, r)
			return
		}
		s.posts.add(1)
		defer s.posts.add(-1)
		next.ServeHTTP(w, r)
	})
}

// drainPoll is how often Drain looks at the requests in flight.
const drainPoll = 5 * time.Millisecond

// Drain waits, once the host drains (host.Host.Drain), until no POST
// request is being served, so that every call's answer has been written
// before Shutdown closes the sessions; or until ctx ends. Call it after
// the host's Drain has returned.
func (s *Server) Drain(ctx context.Context) error {
	t := time.NewTicker(drainPoll)
	defer t.Stop()
	for {
		n := s.posts.count()
		if n == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("mcp drain: %d requests still being served: %w", n, ctx.Err())
		case <-t.C:
		}
	}
}
