package server

import (
	"fmt"
	"net/http"

	"github.com/plugkit-go/plugkit/host"
)

// Health endpoints, served beside /metrics: a cluster's liveness and
// readiness probes.
const (
	healthzPath = "/healthz"
	readyzPath  = "/readyz"
)

// addHealth serves /healthz (the process answers: 200 "ok") and /readyz
// (200 "ready" when h is Ready and mcp, the MCP listener's check, says it
// accepts; otherwise 503 with the reason). Both answer every method a probe
// uses, GET and HEAD.
func addHealth(mux *http.ServeMux, h *host.Host, mcp func() error) {
	mux.HandleFunc(healthzPath, func(w http.ResponseWriter, r *http.Request) {
		plain(w, http.StatusOK, "ok")
	})
	mux.HandleFunc(readyzPath, func(w http.ResponseWriter, r *http.Request) {
		err := h.Ready()
		if err == nil && mcp != nil {
			err = mcp()
		}
		if err != nil {
			plain(w, http.StatusServiceUnavailable, "not ready: "+err.Error())
			return
		}
		plain(w, http.StatusOK, "ready")
	})
}

func plain(w http.ResponseWriter, code int, body string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	fmt.Fprintln(w, body)
}
