package admin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/plugkit-go/plugkit/host"
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
}

// Server serves the admin API.
type Server struct {
	c   Controls
	log hclog.Logger
	srv *http.Server

	mu      sync.Mutex
	waiting map[string]chan bool // question id → the call waiting for its answer
}

// NewServer returns a server for c.
func NewServer(c Controls, log hclog.Logger) *Server {
	s := &Server{c: c, log: log, waiting: map[string]chan bool{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/status", s.status)
	mux.HandleFunc("GET /v1/tools", s.tools)
	mux.HandleFunc("POST /v1/call", s.call)
	mux.HandleFunc("POST /v1/answer", s.answer)
	mux.HandleFunc("POST /v1/reload", s.reload)
	mux.HandleFunc("POST /v1/stop", s.stop)
	s.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	return s
}

// Listen makes the owner-only Unix socket at path: its folder is created
// 0700 if missing, a stale socket left by a host that died is removed, and
// a socket a live host is serving is refused.
func Listen(path string) (net.Listener, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("admin socket folder: %w", err)
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
	return ln, nil
}

// Serve serves on ln until Shutdown.
func (s *Server) Serve(ln net.Listener) error {
	err := s.srv.Serve(ln)
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
			Restarts: p.Restarts, Critical: p.Critical, Tools: p.Tools, LastError: p.LastError,
			LastExit: p.LastExit, Stderr: p.Stderr, Sandbox: p.Sandbox,
		}
		if ps.Tools == nil {
			ps.Tools = []string{}
		}
		if !p.Started.IsZero() {
			ps.Uptime = time.Since(p.Started).Round(time.Second).String()
		}
		out.Plugins = append(out.Plugins, ps)
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) tools(w http.ResponseWriter, r *http.Request) {
	out := []Tool{}
	for _, t := range s.c.Host.Tools() {
		tool := Tool{
			Name: t.Name, Owner: t.Owner, Description: t.Description, Parameters: t.Parameters,
			Destructive: t.Destructive, ReadOnly: t.ReadOnly, Idempotent: t.Idempotent,
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
		ask = func(ctx context.Context, q host.Question) (bool, error) {
			ch := make(chan bool, 1)
			s.mu.Lock()
			s.waiting[q.ID] = ch
			s.mu.Unlock()
			defer func() {
				s.mu.Lock()
				delete(s.waiting, q.ID)
				s.mu.Unlock()
			}()
			send(CallEvent{Question: &q})
			select {
			case ok := <-ch:
				return ok, nil
			case <-ctx.Done():
				return false, fmt.Errorf("no answer: %w", ctx.Err())
			}
		}
	}
	caller, release := s.c.Host.Approvals.Caller("cli", ask)
	defer release()
	res := FromResult(s.c.Host.Call(r.Context(), req.Tool, req.Arguments, caller))
	send(CallEvent{Result: &res})
}

func (s *Server) answer(w http.ResponseWriter, r *http.Request) {
	var a Answer
	if err := json.NewDecoder(r.Body).Decode(&a); err != nil {
		writeJSON(w, http.StatusBadRequest, Message{Error: "answer: bad request: " + err.Error()})
		return
	}
	s.mu.Lock()
	ch, ok := s.waiting[a.ID]
	s.mu.Unlock()
	if !ok {
		writeJSON(w, http.StatusNotFound, Message{Error: "answer: no question " + a.ID + " is waiting"})
		return
	}
	select {
	case ch <- a.Approved:
	default:
	}
	writeJSON(w, http.StatusOK, Message{Message: "answered"})
}

func (s *Server) reload(w http.ResponseWriter, r *http.Request) {
	var req ReloadRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		writeJSON(w, http.StatusBadRequest, Message{Error: "reload: bad request: " + err.Error()})
		return
	}
	msg, err := s.c.Reload(r.Context(), req.Plugin)
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
