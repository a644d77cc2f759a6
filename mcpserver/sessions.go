package mcpserver

import (
	"net/http"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// sessionHeader carries a streamable HTTP session's id.
const sessionHeader = "Mcp-Session-Id"

// sessionCap keeps at most max streamable HTTP sessions. A request that
// would start one more when the cap is reached first closes the session
// that has been idle longest (no request in flight; the SDK's idle timer
// counts the same way); when every session is busy it is refused with 503.
// A client whose session was closed gets 404 on its next request and starts
// a new session, as the protocol says.
//
// Sessions are also capped per principal (perPrincipal): a principal at its
// cap makes room among its own sessions only, so that one credential that
// opens many sessions cannot evict another's. When the total is reached,
// the session closed is the idle-longest of the principal holding the
// most.
//
// The SDK keeps the sessions; this only watches the requests that go by:
// an initialize POST without a session id whose answer names one adds a
// session (before the answer goes out), a POST with one marks it busy
// while it runs. Sessions that
// ended otherwise (idle timeout, DELETE, shutdown) are dropped whenever the
// live ones are counted.
type sessionCap struct {
	max          int
	perPrincipal int
	srv          *mcp.Server

	mu       sync.Mutex
	sessions map[string]*activity // by session id
}

// activity is one session's use.
type activity struct {
	posts     int       // requests in flight
	last      time.Time // when the last one ended, or the session began
	principal string    // whose credential opened it ("" without one)
}

func newSessionCap(max, perPrincipal int, srv *mcp.Server) *sessionCap {
	if perPrincipal <= 0 || perPrincipal > max {
		perPrincipal = max
	}
	return &sessionCap{max: max, perPrincipal: perPrincipal, srv: srv, sessions: map[string]*activity{}}
}

// principalOf is who a request is for: the user its credential names.
func principalOf(r *http.Request) string {
	if ti := auth.TokenInfoFromContext(r.Context()); ti != nil {
		return ti.UserID
	}
	return ""
}

// wrap puts the cap in front of the SDK's handler.
func (c *sessionCap) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			next.ServeHTTP(w, r)
			return
		}
		if id := r.Header.Get(sessionHeader); id != "" {
			c.begin(id)
			defer c.end(id)
			next.ServeHTTP(w, r)
			return
		}
		principal := principalOf(r)
		if !c.makeRoom(principal, 1) {
			http.Error(w, "too many MCP sessions: all of the host's mcp_max_sessions (or of yours) are busy; try again later", http.StatusServiceUnavailable)
			return
		}
		cw := &captureID{ResponseWriter: w, c: c, principal: principal}
		next.ServeHTTP(cw, r)
		if cw.added {
			// Others may have started sessions meanwhile.
			c.makeRoom(principal, 0)
		}
	})
}

// captureID adds the session a response names before the response goes
// out: from then on the client may use the session, and its requests must
// find it counted.
type captureID struct {
	http.ResponseWriter
	c         *sessionCap
	principal string
	wrote     bool
	added     bool
}

func (w *captureID) note(code int) {
	if w.wrote {
		return
	}
	w.wrote = true
	if id := w.Header().Get(sessionHeader); id != "" && code < 300 {
		w.c.add(id, w.principal)
		w.added = true
	}
}

func (w *captureID) WriteHeader(code int) {
	w.note(code)
	w.ResponseWriter.WriteHeader(code)
}

func (w *captureID) Write(b []byte) (int, error) {
	w.note(http.StatusOK)
	return w.ResponseWriter.Write(b)
}

func (w *captureID) Flush() {
	w.note(http.StatusOK)
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection.
func (w *captureID) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (c *sessionCap) begin(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if a := c.sessions[id]; a != nil {
		a.posts++
	}
}

func (c *sessionCap) end(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if a := c.sessions[id]; a != nil && a.posts > 0 {
		a.posts--
		a.last = time.Now()
	}
}

func (c *sessionCap) add(id, principal string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.sessions[id]; !ok {
		c.sessions[id] = &activity{last: time.Now(), principal: principal}
	}
}

// makeRoom closes idle sessions until principal holds at most
// perPrincipal-reserve of them and the total is at most max-reserve, and
// says whether it got there. Only principal's own sessions make room for
// it under its cap; under the total, the principal holding the most gives
// up its idle-longest.
func (c *sessionCap) makeRoom(principal string, reserve int) bool {
	var evict []*mcp.ServerSession
	c.mu.Lock()
	// Listed under mu: a session added after the list was taken would
	// look gone and be forgotten, never to be evicted.
	live := map[string]*mcp.ServerSession{}
	for ss := range c.srv.Sessions() {
		live[ss.ID()] = ss
	}
	held := map[string]int{}
	for id, a := range c.sessions {
		if live[id] == nil {
			delete(c.sessions, id)
			continue
		}
		held[a.principal]++
	}
	closeOldest := func(of string) bool {
		oldest := ""
		for id, a := range c.sessions {
			if a.principal == of && a.posts == 0 && (oldest == "" || a.last.Before(c.sessions[oldest].last)) {
				oldest = id
			}
		}
		if oldest == "" {
			return false // every one of them is busy
		}
		delete(c.sessions, oldest)
		held[of]--
		evict = append(evict, live[oldest])
		return true
	}
	ok := true
	for ok && held[principal] > c.perPrincipal-reserve {
		ok = closeOldest(principal)
	}
	for ok && len(c.sessions) > c.max-reserve {
		// The principal holding the most, among those with an idle one.
		most, n := "", -1
		for p, k := range held {
			if k > n && c.hasIdle(p) {
				most, n = p, k
			}
		}
		ok = n >= 0 && closeOldest(most)
	}
	c.mu.Unlock()
	for _, ss := range evict {
		_ = ss.Close()
	}
	return ok
}

// hasIdle says whether principal has a session with no request in flight.
func (c *sessionCap) hasIdle(principal string) bool {
	for _, a := range c.sessions {
		if a.principal == principal && a.posts == 0 {
			return true
		}
	}
	return false
}
