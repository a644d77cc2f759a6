package mcpserver

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/plugkit-go/plugkit/host"
	"github.com/plugkit-go/plugkit/internal/httplimit"
	"github.com/plugkit-go/plugkit/kernel"
	"github.com/plugkit-go/plugkit/pipeline"
)

// Path is where the streamable HTTP endpoint is served.
const Path = "/mcp"

// CallerPrefix names MCP sessions as callers: mcp#1, mcp#2, ...
const CallerPrefix = "mcp"

// Defaults of the streamable HTTP limits (Options).
const (
	// DefaultMaxSessions is how many HTTP sessions are kept at once; one
	// more closes the session idle longest.
	DefaultMaxSessions = 64
	// DefaultMaxSessionsPerPrincipal is how many of them one principal
	// (one credential's user, or the host's own user without mcp_auth)
	// may hold; one more closes that principal's idle-longest.
	DefaultMaxSessionsPerPrincipal = 16
	// DefaultSessionIdle closes an HTTP session that has sent no request
	// for this long, so that a client that went away without saying so
	// does not hold a caller; it starts a new session on its next request.
	DefaultSessionIdle = 5 * time.Minute
	// DefaultMaxConns caps the connections served at once: a session may
	// hold one for its event stream and one per request in flight.
	DefaultMaxConns = 4 * DefaultMaxSessions
	// DefaultMaxConnsPerPeer caps the connections of one peer (an address,
	// or a user on loopback): a quarter of DefaultMaxConns, so that one
	// peer's stalled requests leave the rest to the others.
	DefaultMaxConnsPerPeer = DefaultMaxConns / 4
)

// Options configure a Server.
type Options struct {
	// Version is the server version clients are told.
	Version string
	// Logger receives the server's logs and the SDK's; in stdio mode it
	// must not write to stdout, which belongs to the protocol. Nil discards.
	Logger hclog.Logger
	// MaxSessions caps the streamable HTTP sessions (DefaultMaxSessions
	// when 0); SessionIdle ends one that sends no request for that long
	// (DefaultSessionIdle when 0).
	MaxSessions int
	SessionIdle time.Duration
	// MaxSessionsPerPrincipal caps the sessions of one principal
	// (DefaultMaxSessionsPerPrincipal when 0, at most MaxSessions).
	MaxSessionsPerPrincipal int
	// Limits bound the HTTP server's connections and requests; zero fields
	// take DefaultMaxConns, DefaultMaxConnsPerPeer (at most MaxConns), the
	// MCP SDK's body limit (4 MiB) and httplimit's defaults. A connection
	// refused for its peer's bound is logged (at most once in 10s) and
	// told to Limits.OnPeerRefused.
	Limits httplimit.Limits
	// Principal is who the calls of a session served with Run or
	// ServeStdio are made for: the user who started the host, whose
	// client it is.
	Principal pipeline.Principal
	// Authenticate, when set, wraps the HTTP handler so that every
	// request must carry a credential (authn.Authenticator.Require); a
	// call over HTTP is then made for the principal it names. Without it
	// a call over HTTP is made for nobody: `host run` always sets it,
	// with authn.Local when the deployment has no mcp_auth.
	Authenticate func(http.Handler) http.Handler
	// ConnContext, when set, is the HTTP server's ConnContext
	// (authn.Local.ConnContext remembers each connection's peer).
	ConnContext func(ctx context.Context, c net.Conn) context.Context
	// AllowedOrigins are the browser origins (scheme://host[:port], see
	// httplimit.NormalizeOrigin) served besides loopback ones on a loopback
	// listener: a request with any other Origin header is refused 403.
	AllowedOrigins []string
	// ToolSearch serves the search_tools tool (toolsearch.go); a caller
	// who sees more than ToolSearchOver tools is listed search_tools
	// alone and finds the others by searching.
	ToolSearch     bool
	ToolSearchOver int
}

// Server serves one host's tools over MCP.
type Server struct {
	h    *host.Host
	log  hclog.Logger
	mcp  *mcp.Server
	impl *mcp.Implementation // what clients are told of the server
	opts Options
	// parkFor is how long a question answered through an input-required
	// result waits for the client's retry: the approval timeout (after which
	// the pipeline has denied the call) and a minute to pick up the denial.
	parkFor time.Duration
	// sealer seals the questions of calls served without a session
	// (UseStateKeys); their answers count for askFor, the approval timeout.
	sealer *sealer
	askFor time.Duration

	// base ends with Shutdown: every session's calls derive from it. It is
	// kept in the struct for the reason session.ctx is.
	base   context.Context
	cancel context.CancelFunc
	// wg counts the follow loop, the calls and the session watchers.
	wg sync.WaitGroup

	unfollow []func()
	changed  chan struct{}
	tmu      sync.Mutex
	touched  map[string]bool // plugins whose state changed since the last sync
	// listed is what clients were last told; only sync touches it.
	listed map[string]pipeline.ToolInfo
	// prompts is what clients were last told of the prompts (prompts.go).
	prompts map[string]pipeline.ToolInfo
	// lists is what clients were last told of the resource lists: each
	// "resources" entry's plugin (listchanged.go).
	lists map[string]pipeline.ToolInfo
	// detached are stateless calls waiting for a route's approvers
	// between their requests (routedwait.go).
	detached detached

	// views is what each session was last shown (visibility.go).
	views views
	// served is the names of listed, for the stdio hot path (hotcall.go).
	served atomic.Pointer[servedSet]
	// hotTaken counts the calls the hot path served (for its tests).
	hotTaken atomic.Int64
	// index is the tool search index of listed, with ToolSearch;
	// searchDef describes search_tools (toolsearch.go).
	index     atomic.Pointer[searchIndex]
	searchDef *mcp.Tool
	// searchTaken: a registered tool named search_tools was warned of
	// (only sync touches it).
	searchTaken bool

	smu      sync.Mutex
	sessions map[*mcp.ServerSession]*session
	closed   bool
	https    []*http.Server // one per Serve

	shutdownOnce sync.Once
	posts        posts // POST requests being served (drain.go)
}

// New returns a server of h's tools. It lists the tools registered now and
// follows the registry from then on, until Shutdown.
func New(h *host.Host, opts Options) *Server {
	log := opts.Logger
	if log == nil {
		log = hclog.NewNullLogger()
	}
	version := opts.Version
	if version == "" {
		version = "dev"
	}
	if opts.MaxSessions <= 0 {
		opts.MaxSessions = DefaultMaxSessions
	}
	if opts.MaxSessionsPerPrincipal <= 0 {
		opts.MaxSessionsPerPrincipal = DefaultMaxSessionsPerPrincipal
	}
	if opts.SessionIdle <= 0 {
		opts.SessionIdle = DefaultSessionIdle
	}
	if opts.Limits.MaxConns <= 0 {
		opts.Limits.MaxConns = DefaultMaxConns
	}
	if opts.Limits.MaxConnsPerPeer <= 0 {
		opts.Limits.MaxConnsPerPeer = min(DefaultMaxConnsPerPeer, opts.Limits.MaxConns)
	}
	opts.Limits.OnPeerRefused = logPeerRefusals(log, opts.Limits.MaxConnsPerPeer, opts.Limits.OnPeerRefused)
	if opts.Limits.MaxBodyBytes <= 0 || opts.Limits.MaxBodyBytes > mcp.DefaultMaxRequestBodyBytes {
		opts.Limits.MaxBodyBytes = mcp.DefaultMaxRequestBodyBytes
	}
	base, cancel := context.WithCancel(context.Background())
	s := &Server{
		h: h, log: log, opts: opts,
		parkFor:  h.Deployment.Host.ApprovalTimeout + time.Minute,
		askFor:   h.Deployment.Host.ApprovalTimeout,
		base:     base,
		cancel:   cancel,
		changed:  make(chan struct{}, 1),
		touched:  map[string]bool{},
		listed:   map[string]pipeline.ToolInfo{},
		prompts:  map[string]pipeline.ToolInfo{},
		lists:    map[string]pipeline.ToolInfo{},
		sessions: map[*mcp.ServerSession]*session{},
	}
	s.sealer, _ = newSealer(nil) // a key of its own cannot fail
	s.impl = &mcp.Implementation{Name: "plugkit", Title: "plugkit host", Version: version}
	s.mcp = mcp.NewServer(s.impl, &mcp.ServerOptions{
		Instructions: "The tools of a plugkit deployment. Every call passes the host's permission pipeline: " +
			"a policy may deny it (the result says why and who decided) or ask your user to approve it.",
		Logger: newSlog(log.Named("sdk")),
		Capabilities: &mcp.ServerCapabilities{
			Tools: &mcp.ToolCapabilities{ListChanged: true},
			// Bridged servers' resources and prompts (resources.go,
			// prompts.go); a change of a resource list is announced
			// (listchanged.go).
			Resources: &mcp.ResourceCapabilities{Subscribe: true, ListChanged: true},
			Prompts:   &mcp.PromptCapabilities{ListChanged: true},
		},
		SetCacheable:       cacheHints,
		SubscribeHandler:   s.subscribe,
		UnsubscribeHandler: unsubscribe,
	})
	s.mcp.AddReceivingMiddleware(s.refuseUnknown, s.offeringsVisible, s.serveResources, s.listVisible)
	s.mcp.AddSendingMiddleware(s.notifyChanged)
	if opts.ToolSearch {
		s.searchDef = searchTool()
		s.mcp.AddTool(s.searchDef, s.searchTools)
	}
	s.sync()
	s.unfollow = []func(){
		h.OnToolsChanged(s.poke),
		h.OnResourceUpdated("mcp", s.resourceUpdated),
		// A rule put in or out of shadow changes what callers see with no
		// tool changed: every tool is announced again, and each session is
		// told only if its own list changed (notifyChanged).
		h.OnShadowChanged("mcp", s.touchAll),
		h.OnStateChange("mcp", func(sc kernel.StateChange) {
			// ACTIVE → ACTIVE is a reload: its tools are new too.
			if sc.From != sc.To || sc.To == kernel.Active {
				s.touch(sc.Plugin)
			}
		}),
	}
	s.wg.Add(1)
	go s.follow()
	return s
}

// Run serves one session over t until the client goes away (stdio: its end
// of the pipe is closed) or ctx ends, which cancels the session's calls.
func (s *Server) Run(ctx context.Context, t mcp.Transport) error {
	return s.run(ctx, t, nil)
}

// run is Run, telling hot (when not nil) the session once connected.
func (s *Server) run(ctx context.Context, t mcp.Transport, hot *hotCalls) error {
	ss, err := s.mcp.Connect(ctx, t, nil)
	if err != nil {
		return fmt.Errorf("mcp: %w", err)
	}
	if hot != nil {
		hot.ss.Store(ss)
	}
	ended := make(chan error, 1)
	go func() { ended <- ss.Wait() }()
	select {
	case err := <-ended:
		s.endSession(ss)
		return ignoreClosed(err)
	case <-ctx.Done():
	case <-s.base.Done():
	}
	// Close waits for the requests in flight, so end their calls first.
	s.endSession(ss)
	_ = ss.Close()
	<-ended
	return nil
}

// ServeStdio serves one session over r and w (newline-delimited JSON-RPC),
// as Run does.
func (s *Server) ServeStdio(ctx context.Context, r io.Reader, w io.Writer) error {
	return s.serveStdio(ctx, r, w, true)
}

// serveStdio is ServeStdio, with tools/call served by the hot path
// (hotcall.go) when hot is true, by the SDK otherwise.
func (s *Server) serveStdio(ctx context.Context, r io.Reader, w io.Writer, hot bool) error {
	ids := &stdioIDs{r: bufio.NewReader(r)}
	out := &lockedWriter{w: ids.writer(w)}
	if hot {
		ids.hot = s.newHotCalls(out)
		defer ids.hot.stop()
	}
	return s.run(ctx, &mcp.IOTransport{Reader: io.NopCloser(ids), Writer: nopWriteCloser{out}}, ids.hot)
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// ignoreClosed treats a client hanging up as the normal end of a session,
// including a last write (the answer to a request the client cancelled as
// it left) that finds the pipe closed.
func ignoreClosed(err error) error {
	for _, normal := range []error{io.EOF, io.ErrClosedPipe, mcp.ErrConnectionClosed, net.ErrClosed, os.ErrClosed, syscall.EPIPE} {
		if errors.Is(err, normal) {
			return nil
		}
	}
	return err
}

// Handler is the streamable HTTP handler, served at Path. It keeps one
// session per client of a protocol before 2026-07-28 (Mcp-Session-Id), so
// that a call can be asked about and the client told when the tools
// change, at most MaxSessions of them (see sessionCap); a 2026-07-28
// client is served without one (stateless.go). The SDK rejects requests whose Host header is not a
// loopback name (DNS rebinding).
func (s *Server) Handler() http.Handler { return s.handler(true) }

// handler is Handler, with a plain tools/call of the sessionless protocol
// served by the HTTP hot path (hothttp.go) when hot is true, by the SDK
// otherwise.
func (s *Server) handler(hot bool) http.Handler {
	mux := http.NewServeMux()
	server := func(*http.Request) *mcp.Server { return s.mcp }
	sdk := mcp.NewStreamableHTTPHandler(server, &mcp.StreamableHTTPOptions{
		Logger:              newSlog(s.log.Named("http")),
		SessionTimeout:      s.opts.SessionIdle,
		MaxRequestBodyBytes: s.opts.Limits.MaxBodyBytes,
	})
	sessions := newSessionCap(s.opts.MaxSessions, s.opts.MaxSessionsPerPrincipal, s.mcp).wrap(exactIDs(s.opts.Limits.MaxBodyBytes, endTogether(sdk)))
	sessionless := exactIDs(s.opts.Limits.MaxBodyBytes, endTogether(mcp.NewStreamableHTTPHandler(server, s.statelessOptions())))
	if hot {
		sessionless = s.hotStateless(sessionless)
	}
	mux.Handle(Path, s.refuseWhileDraining(byEra(sessionless, sessions)))
	var h http.Handler = mux
	if s.opts.Authenticate != nil {
		// Around the whole mux: it may serve paths of its own (an OAuth
		// resource's metadata).
		h = s.opts.Authenticate(mux)
	}
	// Outermost: a foreign page's request is refused before anything,
	// a credential check included, looks at it.
	return checkOrigin(s.opts.AllowedOrigins, h)
}

// Sessions is how many MCP sessions are being served (stdio and HTTP).
func (s *Server) Sessions() int {
	n := 0
	for range s.mcp.Sessions() {
		n++
	}
	return n
}

// Listen listens on addr, the deployment's loopback host:port (the file is
// checked before, so this does not check again).
func Listen(addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("mcp: %w", err)
	}
	return ln, nil
}

// Serve serves streamable HTTP on ln until Shutdown; it may serve several
// listeners at once. Each serves at most Limits.MaxConns connections at
// once, and bounds the time a client may take to send a request.
func (s *Server) Serve(ln net.Listener) error {
	srv := s.opts.Limits.Server(s.Handler())
	srv.ConnContext = s.opts.ConnContext
	ln = s.opts.Limits.Listener(srv, ln)
	s.smu.Lock()
	if s.closed {
		s.smu.Unlock()
		ln.Close()
		return nil
	}
	s.https = append(s.https, srv)
	s.smu.Unlock()
	err := srv.Serve(ln)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// Shutdown stops following the registry, ends every call in flight
// (ABORTED) and every session, and stops the HTTP server, whose requests get
// until ctx ends to finish. It may be called more than once.
func (s *Server) Shutdown(ctx context.Context) error {
	var err error
	s.shutdownOnce.Do(func() {
		for _, u := range s.unfollow {
			u()
		}
		s.smu.Lock()
		s.closed = true
		https := s.https
		s.smu.Unlock()
		s.cancel()
		// A session's Close waits for its requests in flight; with base
		// cancelled their calls end, so it does not wait long.
		for ss := range s.mcp.Sessions() {
			_ = ss.Close()
		}
		var errs []error
		for _, srv := range https {
			errs = append(errs, shutdownHTTP(ctx, srv))
		}
		err = errors.Join(errs...)
		s.wg.Wait()
		s.closeIndex()
	})
	return err
}

// shutdownHTTP stops srv once its calls and sessions are over. What is left
// are idle connections and ones a client opened without sending a request
// yet, which net/http's Shutdown waits five seconds for; a second is plenty
// for a last response to be written, then the rest are closed.
func shutdownHTTP(ctx context.Context, srv *http.Server) error {
	gctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	if err := srv.Shutdown(gctx); err != nil {
		srv.Close()
		return ctx.Err()
	}
	return nil
}
