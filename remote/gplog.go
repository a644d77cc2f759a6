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

func (l goPluginLog) Info(msg string, args ...any) {
	if msg == goPluginExited {
		l.Logger.Debug(msg, args...)
		return
	}
	l.Logger.Info(msg, args...)
}

func (l goPluginLog) Error(msg string, args ...any) {
	if msg == goPluginExited {
		l.Logger.Debug(msg, args...)
		return
	}
	l.Logger.Error(msg, args...)
}

func (l goPluginLog) Log(level hclog.Level, msg string, args ...any) {
	if msg == goPluginExited && level > hclog.Debug {
		level = hclog.Debug
	}
	l.Logger.Log(level, msg, args...)
}
