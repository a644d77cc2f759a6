package mcpserver

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
)

// newSlog gives the SDK, which logs with slog, the host's hclog logger, so
// that its lines go where the host's go (stderr, never stdout).
func newSlog(log hclog.Logger) *slog.Logger { return slog.New(&slogHandler{log: log}) }

type slogHandler struct {
	log   hclog.Logger
	group string
}

// level maps the SDK's levels one step down: it logs every session and
// connection at info, which is the host's debug.
func level(l slog.Level) hclog.Level {
	switch {
	case l >= slog.LevelError:
		return hclog.Error
	case l >= slog.LevelWarn:
		return hclog.Warn
	case l >= slog.LevelInfo:
		return hclog.Debug
	default:
		return hclog.Trace
	}
}

func (h *slogHandler) Enabled(_ context.Context, l slog.Level) bool {
	return h.log.GetLevel() <= level(l) && h.log.GetLevel() != hclog.Off
}

func (h *slogHandler) Handle(_ context.Context, r slog.Record) error {
	args := make([]any, 0, 2*r.NumAttrs())
	r.Attrs(func(a slog.Attr) bool {
		args = append(args, h.key(a.Key), a.Value.Resolve().Any())
		return true
	})
	lv := level(r.Level)
	if lv > hclog.Debug && undeliveredNotification(r.Message) {
		lv = hclog.Debug
	}
	h.log.Log(lv, r.Message, args...)
	return nil
}

// undeliveredNotification reports whether msg is the SDK's warning that a
// notification (tools/list_changed after a reload) found a session's stream
// gone: a client that went away without ending its session. Nothing is
// wrong, and every reload would warn once per such session until it idles
// out (mcp_idle_timeout).
func undeliveredNotification(msg string) bool {
	return strings.HasPrefix(msg, "calling notifications/") && strings.Contains(msg, "rejected by transport")
}

func (h *slogHandler) key(k string) string {
	if h.group == "" {
		return k
	}
	return h.group + "." + k
}

func (h *slogHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	args := make([]any, 0, 2*len(attrs))
	for _, a := range attrs {
		args = append(args, h.key(a.Key), a.Value.Resolve().Any())
	}
	return &slogHandler{log: h.log.With(args...), group: h.group}
}

func (h *slogHandler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	return &slogHandler{log: h.log, group: h.key(name)}
}

// peerRefusalLogEvery is how often, at most, refusals for a peer's bound
// are logged: a flood of them would otherwise flood the log.
const peerRefusalLogEvery = 10 * time.Second

// logPeerRefusals returns an OnPeerRefused that logs the refusals, at most
// one line per peerRefusalLogEvery naming how many were refused since,
// and tells next (the metric) of each.
func logPeerRefusals(log hclog.Logger, bound int, next func(string)) func(string) {
	var mu sync.Mutex
	var last time.Time
	var since int
	return func(peer string) {
		if next != nil {
			next(peer)
		}
		mu.Lock()
		since++
		now := time.Now()
		if now.Sub(last) < peerRefusalLogEvery {
			mu.Unlock()
			return
		}
		n := since
		last, since = now, 0
		mu.Unlock()
		log.Warn("connection refused: its peer holds the most connections one peer may (mcp_max_conns_per_peer)",
			"peer", peer, "bound", bound, "refused_since_last_line", n)
	}
}
