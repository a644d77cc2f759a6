package sdk

import (
	"time"

	"github.com/hashicorp/go-hclog"
)

// durationLogger logs a time.Duration as "1m58s" rather than as its
// nanoseconds: a plugin logs JSON, which has no durations, and the host
// re-logged waited=1.2e+11.
type durationLogger struct{ hclog.Logger }

func durationStrings(args []any) []any {
	var out []any
	for i, a := range args {
		if d, ok := a.(time.Duration); ok {
			if out == nil {
				out = append([]any(nil), args...)
			}
			out[i] = d.String()
		}
	}
	if out == nil {
		return args
	}
	return out
}

func (l durationLogger) Log(level hclog.Level, msg string, args ...any) {
	l.Logger.Log(level, msg, durationStrings(args)...)
}
func (l durationLogger) Trace(msg string, args ...any) { l.Logger.Trace(msg, durationStrings(args)...) }
func (l durationLogger) Debug(msg string, args ...any) { l.Logger.Debug(msg, durationStrings(args)...) }
func (l durationLogger) Info(msg string, args ...any)  { l.Logger.Info(msg, durationStrings(args)...) }
func (l durationLogger) Warn(msg string, args ...any)  { l.Logger.Warn(msg, durationStrings(args)...) }
func (l durationLogger) Error(msg string, args ...any) { l.Logger.Error(msg, durationStrings(args)...) }
func (l durationLogger) With(args ...any) hclog.Logger {
	return durationLogger{l.Logger.With(durationStrings(args)...)}
}
func (l durationLogger) Named(name string) hclog.Logger { return durationLogger{l.Logger.Named(name)} }
func (l durationLogger) ResetNamed(name string) hclog.Logger {
	return durationLogger{l.Logger.ResetNamed(name)}
}
