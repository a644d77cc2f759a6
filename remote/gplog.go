package remote

import "github.com/hashicorp/go-hclog"

// goPluginLog is the logger go-plugin gets for a process. go-plugin logs
// each exit of the process it ran as "plugin process exited" with the
// binary it started, at INFO (or ERROR with the exit status): for a
// sandboxed plugin that binary is the launcher (the host itself), so every
// start and reload logged lines naming the host as the plugin. The host
// reports a process's end itself, by the plugin's name (a crash at ERROR,
// a deliberate stop not at all), so go-plugin's lines go to DEBUG.
type goPluginLog struct{ hclog.Logger }

const goPluginExited = "plugin process exited"

// goPluginNotGraceful is what go-plugin warns when it kills a process that
// did not exit on its own: one that failed to start, whose error the host
// reports (so `host validate` printed this before the real message), or one
// the host stops after its drain, which the host logs itself.
const goPluginNotGraceful = "plugin failed to exit gracefully"

func quiet(msg string) bool { return msg == goPluginExited || msg == goPluginNotGraceful }

func (l goPluginLog) Info(msg string, args ...any) {
	if quiet(msg) {
		l.Logger.Debug(msg, args...)
		return
	}
	l.Logger.Info(msg, args...)
}

func (l goPluginLog) Warn(msg string, args ...any) {
	if quiet(msg) {
		l.Logger.Debug(msg, args...)
		return
	}
	l.Logger.Warn(msg, args...)
}

func (l goPluginLog) Error(msg string, args ...any) {
	if quiet(msg) {
		l.Logger.Debug(msg, args...)
		return
	}
	l.Logger.Error(msg, args...)
}

func (l goPluginLog) Log(level hclog.Level, msg string, args ...any) {
	if quiet(msg) && level > hclog.Debug {
		level = hclog.Debug
	}
	l.Logger.Log(level, msg, args...)
}

// Named keeps the plugin's logger: go-plugin names the logger of a
// process's stderr after the binary it started, which gave
// host.index.host for a sandboxed plugin (the launcher is the host
// binary), host.fs.mcp for a bridge and host.files.files otherwise. Every
// line of a plugin is host.NAME, whatever runs it.
func (l goPluginLog) Named(string) hclog.Logger { return l }
