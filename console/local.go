package console

import (
	"net"
	"net/http"
	"strings"
)

// signInLocal signs in the host's own user when r comes from one of its
// processes (Config.Local) and names the console by a loopback address or
// localhost: a page that a DNS name rebinds to 127.0.0.1 runs in that
// user's browser too, and must not read the console with its rights. It
// returns nil, having done nothing, for anyone else.
func (con *Console) signInLocal(w http.ResponseWriter, r *http.Request) *session {
	if !con.fromLocalUser(r) {
		return nil
	}
	who, err := con.c.Local(r)
	if err != nil {
		return nil
	}
	return con.startSession(w, who, true)
}

// fromLocalUser reports whether r may be served as the host's own user.
func (con *Console) fromLocalUser(r *http.Request) bool {
	if con.c.Local == nil || !loopbackHost(r.Host) {
		return false
	}
	if _, err := con.c.Local(r); err != nil {
		con.c.Log.Debug("console: not the host's user", "why", err)
		return false
	}
	return true
}

// loopbackHost reports whether the Host header names a loopback address
// or localhost.
func loopbackHost(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
