package httplimit

import (
	"net"
	"net/http"
	"net/url"
	"strings"
)

// LoopbackHost refuses, with 403, a request whose Host header does not
// name a loopback address (localhost, 127.0.0.1, ::1): a server on
// loopback is reachable from a web page the user opens only through a DNS
// name rebound to 127.0.0.1, and such a request names that page's host.
func LoopbackHost(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host := r.Host
		if h, _, err := net.SplitHostPort(host); err == nil {
			host = h
		}
		if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
			http.Error(w, "forbidden: the Host header does not name a loopback address", http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// NormalizeOrigin returns origin as scheme://host[:port], lower case, or
// false when it is not an http or https origin (no path, query, user or
// fragment): the form mcp_allowed_origins is compared in.
func NormalizeOrigin(origin string) (string, bool) {
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" ||
		u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" || u.Opaque != "" {
		return "", false
	}
	return strings.ToLower(u.Scheme + "://" + strings.TrimSuffix(u.Host, ".")), true
}
