package mcpserver

import (
	"context"
	"log/slog"
	"strings"

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
