package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/user"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/plugkit-go/plugkit/plugins/mcp/launcher"
)

// serverEnv is a stdio server's whole environment: what the block declares,
// plus PATH and HOME unless declared. The host gives a plugin no environment
// of its own, so PATH is the plugin's if it has one, else the usual system
// path, and HOME is the plugin's, else the user's home folder from the
// user database. The proxy variables the host sets for a plugin with an
// egress list pass too, unless declared: the server's only way out is the
// same proxy. Nothing else of the host's environment reaches the server.
func serverEnv(declared map[string]string) []string {
	env := make([]string, 0, len(declared)+2)
	for _, k := range proxyVars {
		if _, ok := declared[k]; ok {
			continue
		}
		if v := os.Getenv(k); v != "" {
			env = append(env, k+"="+v)
		}
	}
	if _, ok := declared["PATH"]; !ok {
		p, ok := os.LookupEnv("PATH")
		if !ok {
			p = defaultPath
		}
		env = append(env, "PATH="+p)
	}
	if _, ok := declared["HOME"]; !ok {
		if h := homeDir(); h != "" {
			env = append(env, "HOME="+h)
		}
	}
	for k, v := range declared {
		env = append(env, k+"="+v)
	}
	return env
}

// proxyVars are what sends a program's HTTP clients to the egress proxy.
var proxyVars = []string{"HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy", "NO_PROXY", "no_proxy"}

// defaultPath is PATH for a server when neither the block nor the plugin's
// environment sets one.
const defaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

func homeDir() string {
	if h, ok := os.LookupEnv("HOME"); ok {
		return h
	}
	if u, err := user.Current(); err == nil {
		return u.HomeDir
	}
	return ""
}

// idleConnsPerServer is how many idle connections to its one server the
// bridge keeps. net/http's default keeps 2 per host and closes the rest as
// they come back, so calls in parallel on one session (each its own POST,
// beside the session's standing GET) opened a new connection about every
// sixth call, each a TCP handshake and, on a plugkit front end, a new
// client to vet. Connections beyond those in use at once are never opened.
const idleConnsPerServer = 64

// upstreamTransport is the HTTP transport of one bridged server.
func upstreamTransport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = idleConnsPerServer
	return t
}

// transport builds the MCP transport for the settings: the launcher around
// the command for stdio, or streamable HTTP with the declared headers. The
// returned stderr relay is nil for HTTP.
func transport(s *settings, log hclog.Logger) (mcp.Transport, *stderrRelay, error) {
	if s.url != "" {
		base := &limitedBody{base: &lingerTransport{base: upstreamTransport(), grace: lingerGrace}, max: int64(s.limits.maxAnswer)}
		client := &http.Client{Transport: &headerTransport{base: base, headers: s.headers}}
		return &mcp.StreamableClientTransport{Endpoint: s.url, HTTPClient: client}, nil, nil
	}
	cmd, err := launcher.Command(s.command, serverEnv(s.env))
	if err != nil {
		return nil, nil, err
	}
	relay := newStderrRelay(log)
	cmd.Stderr = relay
	return &commandTransport{cmd: cmd, terminate: 2 * time.Second, maxAnswer: s.limits.maxAnswer}, relay, nil
}

// headerTransport adds the block's headers to every request.
type headerTransport struct {
	base    http.RoundTripper
	headers map[string]string
	// session, when set, is the token of the session's own requests once
	// a principal signed in (signin.go); unauthorized records a 401 to a
	// request that carried no call's token.
	session      *sessionToken
	unauthorized atomic.Bool
}

// CloseIdleConnections closes the idle connections of the transport
// below (http.Client.CloseIdleConnections reaches it through this).
func (t *headerTransport) CloseIdleConnections() { closeIdle(t.base) }

func closeIdle(rt http.RoundTripper) {
	if c, ok := rt.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

func (t *headerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if len(t.headers) > 0 {
		req = req.Clone(req.Context())
		for k, v := range t.headers {
			req.Header.Set(k, v)
		}
	}
	req = t.sessionBearer(req)
	_, perCall := req.Context().Value(bearerKey{}).(*callBearerState)
	req, seen := callBearer(req)
	resp, err := t.base.RoundTrip(req)
	if resp != nil && resp.StatusCode == http.StatusUnauthorized && !perCall {
		t.unauthorized.Store(true)
	}
	return seen(resp), err
}

// stderrRelay logs each line the server writes to stderr through the
// plugin's logger, which the host shows under the plugin's name. The
// launcher's own line saying how the server ended is kept as the cause.
type stderrRelay struct {
	log  hclog.Logger
	pw   *io.PipeWriter
	done chan struct{}

	mu    sync.Mutex
	cause string
}

func newStderrRelay(log hclog.Logger) *stderrRelay {
	pr, pw := io.Pipe()
	r := &stderrRelay{log: log, pw: pw, done: make(chan struct{})}
	go r.read(pr)
	return r
}

func (r *stderrRelay) Write(p []byte) (int, error) { return r.pw.Write(p) }

// Close ends the relay once the launcher's stderr is closed (exec closes
// it after Wait); the lines written before are all logged.
func (r *stderrRelay) Close() error {
	err := r.pw.Close()
	<-r.done
	return err
}

func (r *stderrRelay) read(pr *io.PipeReader) {
	defer close(r.done)
	sc := bufio.NewScanner(pr)
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), "\r")
		if rest, ok := strings.CutPrefix(line, launcher.Prefix); ok {
			r.mu.Lock()
			r.cause = rest
			r.mu.Unlock()
			continue
		}
		if strings.TrimSpace(line) != "" {
			r.log.Info(line, "stream", "server stderr")
		}
	}
	// A line longer than the buffer ends the scan; keep draining so the
	// server never blocks on a full pipe.
	_, _ = io.Copy(io.Discard, pr)
}

// exitCause is how the launcher said the server ended, waiting briefly for
// its line (it arrives just after stdout closes).
func (r *stderrRelay) exitCause(wait time.Duration) string {
	deadline := time.Now().Add(wait)
	for {
		r.mu.Lock()
		c := r.cause
		r.mu.Unlock()
		if c != "" || time.Now().After(deadline) {
			return c
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// connect initialises an MCP session over t. onListChanged is called on
// every notifications/tools/list_changed and prompts/list_changed;
// onUpdated on every notifications/resources/updated with its URI, and on
// resources/list_changed with none; elicit answers the server's
// elicitation/create (form and URL mode).
func connect(ctx context.Context, s *settings, t mcp.Transport, relay *stderrRelay, onListChanged func(), onUpdated func(uri string), elicit func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error)) (*mcp.ClientSession, error) {
	client := mcp.NewClient(&mcp.Implementation{Name: "plugkit-mcp-bridge", Version: pluginVersion}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { onListChanged() },
		// A prompt is an entry of the registry as a tool is.
		PromptListChangedHandler: func(context.Context, *mcp.PromptListChangedRequest) { onListChanged() },
		ResourceUpdatedHandler: func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
			if req.Params != nil && req.Params.URI != "" {
				onUpdated(req.Params.URI)
			}
		},
		// The resources are listed per call: a change is only passed on
		// (onUpdated with no URI) for the clients to list again.
		ResourceListChangedHandler: func(context.Context, *mcp.ResourceListChangedRequest) { onUpdated("") },
		ElicitationHandler:         elicit,
		Capabilities: &mcp.ClientCapabilities{
			// The roots the SDK declares by default, as before: servers of
			// the eras before 2026-07-28 may still rely on them.
			//lint:ignore SA1019 deprecated only from 2026-07-28 on
			RootsV2:     &mcp.RootCapabilities{ListChanged: true},
			Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}, URL: &mcp.URLElicitationCapabilities{}},
		},
	})
	cctx, cancel := s.limits.control(ctx)
	defer cancel()
	cs, err := client.Connect(cctx, t, nil)
	if err != nil {
		err = s.limits.timedOut("initialize", err)
		if relay != nil {
			if cause := relay.exitCause(500 * time.Millisecond); cause != "" {
				err = fmt.Errorf("%w (%s)", err, cause)
			}
		}
		return nil, fmt.Errorf("connect to the MCP server %s: %w", s.describe(), err)
	}
	return cs, nil
}

// errServerGone marks calls that failed because the server went away.
var errServerGone = errors.New("the MCP server went away")
