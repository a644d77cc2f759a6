package mcpserver

import (
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"

	"github.com/plugkit-go/plugkit/internal/httplimit"
)

// checkOrigin refuses, with 403, a request whose Origin header names a
// site the server does not serve: the MCP transport requires servers to
// validate Origin, since a web page the user opens can make the browser
// POST to a loopback port with the user's own address. A request without
// Origin (any client that is not a browser) passes. On a loopback listener
// an origin on a loopback host (localhost, 127.0.0.0/8, ::1) passes; on
// any listener, one of allowed (mcp_allowed_origins) does.
func checkOrigin(allowed []string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		origin := r.Header.Values("Origin")
		if len(origin) == 0 {
			next.ServeHTTP(w, r)
			return
		}
		if len(origin) > 1 {
			http.Error(w, "forbidden: more than one Origin header", http.StatusForbidden)
			return
		}
		if !originAllowed(origin[0], allowed, onLoopback(r)) {
			http.Error(w, fmt.Sprintf("forbidden: origin %q is not served here (allowed: loopback origins on a loopback listener, and mcp_allowed_origins)",
				truncate(origin[0], 200)), http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// originAllowed says whether origin (an Origin header's value) passes.
func originAllowed(origin string, allowed []string, loopback bool) bool {
	norm, ok := httplimit.NormalizeOrigin(origin)
	if !ok {
		return false // "null" (a sandboxed frame, a file: page) included
	}
	if slices.Contains(allowed, norm) {
		return true
	}
	if !loopback {
		return false
	}
	u, _ := url.Parse(norm)
	host := u.Hostname()
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// onLoopback says whether r came in on a loopback address of the server.
func onLoopback(r *http.Request) bool {
	a, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if !ok {
		return false
	}
	host, _, err := net.SplitHostPort(a.String())
	if err != nil {
		return false
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
