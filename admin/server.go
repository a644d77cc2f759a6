package admin

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/plugkit-go/plugkit/host"
	"github.com/plugkit-go/plugkit/internal/httplimit"
	"github.com/plugkit-go/plugkit/pipeline"
	"github.com/plugkit-go/plugkit/remote"
	"github.com/plugkit-go/plugkit/shared/wire"
)

// Controls are what the admin API serves: the running host, and the run
// loop's reload and stop.
type Controls struct {
	Host *host.Host
	// Reload reloads one plugin, or the whole file when plugin is "".
	Reload func(ctx context.Context, plugin string) (string, error)
	// Stop asks the host to stop.
	Stop    func()
	Version string
	// Limits bound the API's connections and requests; MaxBodyBytes is
	// the deployment's max_message_bytes (NewServer's default when zero).
	Limits httplimit.Limits
}

// Limits of the admin API where Controls leaves them zero: the host's own
// commands need few connections at once (idle ones are closed for new
// ones); a request body may be as large as a message to a plugin.
const maxConns = 64

// Server serves the admin API.
type Server struct {
	c   Controls
	log hclog.Logger
	srv *http.Server
	lim httplimit.Limits

	mu      sync.Mutex
	waiting map[string]*waiter // question id → the call waiting for its answer
	peers   peers
}

// NewServer returns a server for c.
func NewServer(c Controls, log hclog.Logger) *Server {
	s := &Server{c: c, log: log, waiting: map[string]*waiter{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/status", s.status)
	mux.HandleFunc("GET /v1/tools", s.tools)
	mux.HandleFunc("POST /v1/call", s.call)
	mux.HandleFunc("POST /v1/explain", s.explain)
	mux.HandleFunc("POST /v1/answer", s.answer)
	mux.HandleFunc("POST /v1/reload", s.reload)
	mux.HandleFunc("POST /v1/stop", s.stop)
	mux.HandleFunc("POST /v1/tokens", s.tokens)
	mux.HandleFunc("POST /v1/tokens/revoke", s.revokeTokens)
	mux.HandleFunc("GET /v1/approvals", s.listApprovals)
	mux.HandleFunc("GET /v1/approvals/{id}", s.showApproval)
	mux.HandleFunc("POST /v1/approvals/{id}/approve", s.approve)
	mux.HandleFunc("POST /v1/approvals/{id}/deny", s.deny)
	lim := c.Limits
	if lim.MaxConns == 0 {
		lim.MaxConns = maxConns
	}
	if lim.MaxBodyBytes == 0 {
		lim.MaxBodyBytes = wire.DefaultMaxMessageBytes
	}
	limit := lim.MaxBodyBytes
	// A call's body is its arguments and a little around them: bounded by
	// max_argument_bytes before it is read, so that a 50 MB argument costs
	// the host no 50 MB buffer before stage 0 refuses it anyway.
	lim.BodyLimit = s.argumentBody
	lim.Refuse = func(w http.ResponseWriter, r *http.Request, code int, msg string) {
		what := strings.TrimPrefix(r.URL.Path, "/v1/")
		if code == http.StatusRequestEntityTooLarge {
			if n := s.argumentBody(r); n > 0 && n < limit {
				msg += fmt.Sprintf(" (the largest max_argument_bytes of the tools is %d, plus %d for the request around the arguments)", n-callEnvelope, callEnvelope)
			} else {
				msg += fmt.Sprintf(" (the host's max_message_bytes is %d)", limit)
			}
		}
		writeJSON(w, code, Message{Error: what + ": refused: " + msg})
	}
	s.lim = lim
	s.srv = lim.Server(mux)
	s.srv.ConnContext = s.peers.connContext
	return s
}

// callEnvelope is what a call's or an explanation's request may hold
// besides its arguments (the tool's name, the principal asked about).
const callEnvelope = 64 << 10

// argumentBody bounds the body of a request carrying a call's arguments:
// the largest max_argument_bytes of any tool registered now, and the
// envelope; 0 (no bound of its own) for other requests.
func (s *Server) argumentBody(r *http.Request) int64 {
	if s.c.Host == nil {
		return 0
	}
	switch r.URL.Path {
	case "/v1/call", "/v1/explain":
		return int64(s.c.Host.Pipeline().MaxArgumentBytes()) + callEnvelope
	}
	return 0
}

// Listen makes the owner-only Unix socket at path: its folder is created
// 0700 if missing, a stale socket left by a host that died is removed, and
// a socket a live host is serving is refused. A folder that another user
// owns, or that group or others may write to, is refused: whoever can
// write to it can replace the socket with one of their own.
func Listen(path string) (net.Listener, error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("admin socket folder: %w", err)
	}
	if err := checkFolder(dir, path); err != nil {
		return nil, err
	}
	if _, err := os.Stat(path); err == nil {
		if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
			c.Close()
			return nil, fmt.Errorf("admin socket %s: another host is running there", path)
		}
		if err := os.Remove(path); err != nil {
			return nil, fmt.Errorf("admin socket %s: remove stale socket: %w", path, err)
		}
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("admin socket: %w", err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, fmt.Errorf("admin socket %s: %w", path, err)
	}
	if err := writePidFile(PidFile(path)); err != nil {
		ln.Close()
		return nil, err
	}
	return &pidListener{Listener: ln, path: PidFile(path)}, nil
}

// checkFolder refuses a socket folder that someone else could write to.
func checkFolder(dir, path string) error {
	fi, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("admin socket folder: %w", err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fmt.Errorf("admin socket folder %s: cannot tell who owns it", dir)
	}
	if me := os.Geteuid(); int(st.Uid) != me {
		return fmt.Errorf("admin socket folder %s belongs to uid %d, not to you (uid %d): its owner could replace the socket; "+
			"put admin_socket in a folder of your own (e.g. run/host.sock beside the deployment file; "+
			"in a shared mount such as a Kubernetes emptyDir, a folder below it, e.g. %s, which the host makes 0700)", dir, st.Uid, me, filepath.Join(dir, "admin", filepath.Base(path)))
	}
	if perm := fi.Mode().Perm(); perm&0o022 != 0 {
		return fmt.Errorf("admin socket folder %s can be written by its group or by others (mode %04o): another user could replace the socket; "+
			"run `chmod go-w %s`, or put admin_socket in a folder only you can write to (in a shared mount such as a Kubernetes emptyDir, "+
			"a folder below it, e.g. %s, which the host makes 0700)", dir, perm, dir, filepath.Join(dir, "admin", filepath.Base(path)))
	}
	return nil
}

// Serve serves on ln until Shutdown, at most Limits.MaxConns connections
// at once.
func (s *Server) Serve(ln net.Listener) error {
	err := s.srv.Serve(s.lim.Listener(s.srv, &guardListener{Listener: ln, log: s.log}))
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// Shutdown stops serving; calls in flight get until ctx ends to finish.
func (s *Server) Shutdown(ctx context.Context) error { return s.srv.Shutdown(ctx) }

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

func (s *Server) status(w http.ResponseWriter, r *http.Request) {
	h := s.c.Host
	out := Status{Version: s.c.Version, PID: os.Getpid(), Uptime: time.Since(h.Started()).Round(time.Second).String(), Plugins: []PluginStatus{}}
	for _, p := range h.Status() {
		ps := PluginStatus{
			Name: p.Name, State: p.State.String(), PID: p.PID, Started: p.Started,
			Restarts: p.Restarts, Critical: p.Critical, Tools: p.Tools, Held: p.Held, LastError: p.LastError,
			LastExit: p.LastExit, Stderr: p.Stderr, Sandbox: sandboxOf(p.Sandbox), Problem: p.Problem,
			Calls: p.Calls, Protocol: p.Protocol, Registered: p.Registered,
		}
		if ps.Tools == nil {
			ps.Tools = []string{}
		}
		if p.Sandbox.Egress != "" || p.Egress != (remote.EgressStatus{}) {
			ps.Egress = &EgressStatus{Allowed: p.Egress.Allowed, Refused: p.Egress.Refused, LastRefused: p.Egress.LastRefused}
		}
		if !p.Started.IsZero() {
			ps.Uptime = time.Since(p.Started).Round(time.Second).String()
		}
		out.Plugins = append(out.Plugins, ps)
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) tools(w http.ResponseWriter, r *http.Request) {
	keep, err := s.visibleFilter(r)
	if err != nil {
		writeJSON(w, http.StatusBadRequest, Message{Error: err.Error()})
		return
	}
	out := []Tool{}
	for _, t := range s.c.Host.Tools() {
		if keep != nil && !keep(t.Name, t.Held) {
			continue
		}
		tool := Tool{
			Name: t.Name, Owner: t.Owner, Description: t.Description, Parameters: t.Parameters,
			Destructive: t.Destructive, ReadOnly: t.ReadOnly, Idempotent: t.Idempotent,
			Notes: t.Notes, Held: t.Held, Definition: t.Definition, Kind: t.Kind,
		}
		if t.Timeout > 0 {
			tool.Timeout = t.Timeout.String()
		}
		out = append(out, tool)
	}
	writeJSON(w, http.StatusOK, out)
}

// call runs one call and streams its questions and result.
func (s *Server) call(w http.ResponseWriter, r *http.Request) {
	var req CallRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		writeJSON(w, http.StatusBadRequest, Message{Error: "call: bad request: " + err.Error()})
		return
	}
	if req.Tool == "" {
		writeJSON(w, http.StatusBadRequest, Message{Error: "call: no tool named"})
		return
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.WriteHeader(http.StatusOK)
	var wmu sync.Mutex
	enc := json.NewEncoder(w)
	flusher, _ := w.(http.Flusher)
	send := func(ev CallEvent) {
		wmu.Lock()
		defer wmu.Unlock()
		_ = enc.Encode(ev)
		if flusher != nil {
			flusher.Flush()
		}
	}
	var ask host.Asker
	if req.Interactive {
		pid, _ := connPID(r.Context())
		ask = func(ctx context.Context, q host.Question) (bool, error) {
			wt := &waiter{answer: make(chan bool, 1), key: rand.Text(), pid: pid}
			s.mu.Lock()
			s.waiting[q.ID] = wt
			s.mu.Unlock()
			defer func() {
				s.mu.Lock()
				delete(s.waiting, q.ID)
				s.mu.Unlock()
			}()
			aq := questionOf(q)
			send(CallEvent{Question: &aq, AnswerKey: wt.key})
			select {
			case ok := <-wt.answer:
				return ok, nil
			case <-ctx.Done():
				return false, fmt.Errorf("no answer: %w", ctx.Err())
			}
		}
	}
	caller, release := s.c.Host.Approvals.Caller("cli", ask)
	defer release()
	if req.Interactive {
		pid, _ := connPID(r.Context())
		defer s.c.Host.Approvals.SetElicitor(caller, s.elicitor(req.Tool, pid, send))()
	}
	ctx := host.WithWaitNotice(r.Context(), func(wt host.Waiting) { send(CallEvent{Waiting: &wt}) })
	if p, ok := peerPrincipal(ctx); ok {
		ctx = pipeline.WithPrincipal(ctx, p)
	}
	res := FromResult(s.c.Host.Call(ctx, req.Tool, req.Arguments, caller))
	send(CallEvent{Result: &res})
}

// explain runs stages 0-2 of a call as a dry run and says what each
// listener would decide. It is served here only, never over MCP: an MCP
// client sees real calls.
func (s *Server) explain(w http.ResponseWriter, r *http.Request) {
	var req ExplainRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		writeJSON(w, http.StatusBadRequest, Message{Error: "explain: bad request: " + err.Error()})
		return
	}
	if req.Tool == "" {
		writeJSON(w, http.StatusBadRequest, Message{Error: "explain: no tool named"})
		return
	}
	ctx := r.Context()
	switch p, ok := peerPrincipal(ctx); {
	case req.As != nil:
		// Only the host's own user reaches this socket: the operator may
		// ask what a call of anyone would do, since nothing runs.
		ctx = pipeline.WithPrincipal(ctx, pipeline.Principal{ID: req.As.ID, Kind: req.As.Kind, Attributes: req.As.Attributes})
	case ok:
		ctx = pipeline.WithPrincipal(ctx, p)
	}
	writeJSON(w, http.StatusOK, s.c.Host.Explain(ctx, req.Tool, req.Arguments, "cli"))
}

func (s *Server) answer(w http.ResponseWriter, r *http.Request) {
	var a Answer
	if err := json.NewDecoder(r.Body).Decode(&a); err != nil {
		writeJSON(w, http.StatusBadRequest, Message{Error: "answer: bad request: " + err.Error()})
		return
	}
	s.mu.Lock()
	wt, ok := s.waiting[a.ID]
	s.mu.Unlock()
	if !ok {
		writeJSON(w, http.StatusNotFound, Message{Error: "answer: no question " + a.ID + " is waiting"})
		return
	}
	// Only the client the question was put to answers it: the key went to
	// it alone, and the answer comes from the process that made the call.
	pid, _ := connPID(r.Context())
	if subtle.ConstantTimeCompare([]byte(a.Key), []byte(wt.key)) != 1 || pid != wt.pid || pid == 0 {
		s.log.Warn("answer refused: not from the client that made the call", "question", a.ID, "pid", pid)
		writeJSON(w, http.StatusForbidden, Message{Error: "answer: refused: question " + a.ID + " was put to another client; only the client that made the call may answer it"})
		return
	}
	if wt.reply != nil {
		if err := checkElicited(a.Elicited); err != nil {
			writeJSON(w, http.StatusBadRequest, Message{Error: "answer: question " + a.ID + ": " + err.Error()})
			return
		}
		select {
		case wt.reply <- a.Elicited:
		default:
		}
	} else {
		select {
		case wt.answer <- a.Approved:
		default:
		}
	}
	writeJSON(w, http.StatusOK, Message{Message: "answered"})
}

// waiter is a call waiting for the answer to a question: the key sent with
// the question and the pid of the process that made the call, which an
// answer must both match.
type waiter struct {
	answer chan bool
	// reply is set instead of answer for an elicitation (elicit.go).
	reply chan json.RawMessage
	key   string
	pid   int
}

func (s *Server) reload(w http.ResponseWriter, r *http.Request) {
	var req ReloadRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		writeJSON(w, http.StatusBadRequest, Message{Error: "reload: bad request: " + err.Error()})
		return
	}
	msg, err := s.c.Reload(r.Context(), req.Plugin)
	if nr := (*NeedsRestart)(nil); errors.As(err, &nr) {
		// Done, with settings left for the next start: not a failure.
		writeJSON(w, http.StatusOK, Message{Message: nr.Summary, Restart: nr.Settings})
		return
	}
	if err != nil {
		writeJSON(w, http.StatusConflict, Message{Error: err.Error()})
		return
	}
	writeJSON(w, http.StatusOK, Message{Message: msg})
}

func (s *Server) stop(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, Message{Message: "stopping"})
	s.c.Stop()
}
