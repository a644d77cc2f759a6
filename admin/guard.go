package admin

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/hashicorp/go-hclog"
)

// guardListener refuses, as it accepts them, connections from a plugin of
// any host or from what a plugin started (checkClient): such a connection
// gets a 403 and is closed before anything is read from it, so no request
// of a plugin ever reaches a handler.
type guardListener struct {
	net.Listener
	log hclog.Logger
}

func (l *guardListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		err = checkClient(c)
		if err == nil {
			return c, nil
		}
		l.log.Warn("admin socket: connection refused", "why", err)
		refuse(c, "admin socket: refused: "+err.Error()+"; the admin API serves the host's user, never a plugin or a process a plugin started")
	}
}

// refuse answers a refused connection with a 403 and closes it, without
// reading its request (the write is small and bounded in time).
func refuse(c net.Conn, msg string) {
	body, _ := json.Marshal(Message{Error: msg})
	_ = c.SetWriteDeadline(time.Now().Add(time.Second))
	_, _ = fmt.Fprintf(c, "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s",
		http.StatusForbidden, http.StatusText(http.StatusForbidden), len(body), body)
	if uc, ok := c.(*net.UnixConn); ok {
		_ = uc.CloseWrite()
	}
	_ = c.Close()
}
