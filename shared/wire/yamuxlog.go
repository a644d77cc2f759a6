package wire

import (
	"bytes"
	"io"
	"log"

	"github.com/hashicorp/go-hclog"
)

// QuietYamux returns log for go-plugin (the host's ClientConfig.Logger, a
// plugin's ServeConfig.Logger), except for what go-plugin's yamux session
// logs when the connection is closed under it. When a plugin process ends
// (a stop, a reload, a crash), one side of the session may still have a
// frame to send or a read in progress, and yamux logs it as an error:
// "[ERR] yamux: Failed to write header: … broken pipe", "Failed to read
// stream data: … use of closed network connection". The process's end is
// reported on its own (an INFO line for a stop, an ERROR for a crash, with
// its exit status), so those lines say nothing more and are logged at
// DEBUG; every other yamux line keeps its level.
func QuietYamux(log hclog.Logger) hclog.Logger { return pluginLogger{log} }

type pluginLogger struct{ hclog.Logger }

func (l pluginLogger) Named(name string) hclog.Logger {
	if name == "yamux" {
		return yamuxLogger{l.Logger.Named(name)}
	}
	return pluginLogger{l.Logger.Named(name)}
}

func (l pluginLogger) ResetNamed(name string) hclog.Logger {
	return pluginLogger{l.Logger.ResetNamed(name)}
}

func (l pluginLogger) With(args ...any) hclog.Logger { return pluginLogger{l.Logger.With(args...)} }

// yamuxLogger demotes a read or write that failed because the connection
// was closed.
type yamuxLogger struct{ hclog.Logger }

func (l yamuxLogger) StandardLogger(opts *hclog.StandardLoggerOptions) *log.Logger {
	return log.New(l.StandardWriter(opts), "", 0)
}

func (l yamuxLogger) StandardWriter(opts *hclog.StandardLoggerOptions) io.Writer {
	return peerGoneFilter{w: l.Logger.StandardWriter(opts), log: l.Logger}
}

type peerGoneFilter struct {
	w   io.Writer
	log hclog.Logger
}

func (f peerGoneFilter) Write(p []byte) (int, error) {
	if peerGone(p) {
		line := bytes.TrimSpace(p)
		line = bytes.TrimPrefix(line, []byte("[ERR] "))
		f.log.Debug(string(line) + " (the connection was closed as a plugin process ended; its end is logged on its own)")
		return len(p), nil
	}
	return f.w.Write(p)
}

// peerGone reports whether a yamux log line is a read or write that
// failed because the connection was closed, by this side or the other.
func peerGone(line []byte) bool {
	if !bytes.Contains(line, []byte("yamux: Failed to")) {
		return false
	}
	for _, closed := range closedConn {
		if bytes.Contains(line, closed) {
			return true
		}
	}
	return false
}

var closedConn = [][]byte{
	[]byte("broken pipe"),
	[]byte("use of closed network connection"),
	[]byte("connection reset by peer"),
	[]byte(": EOF"),
}
