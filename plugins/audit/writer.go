package main

import (
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/plugkit-go/plugkit/shared/wire"
)

// A log has one writer at a time (its lock). The writer says who it is in
// a file beside the log, so that a process that finds the log locked can
// tell a hot reload's hand-over (the old process of the same host, which
// lets go within the host's drain timeout: wait for it) from a second
// writer, another host or `host test` on the same file (refuse to start,
// naming it: waiting would serve calls that are never audited).

// writer is the content of the file beside the log.
type writer struct {
	PID     int       `json:"pid"`  // the audit plugin's process, as it sees itself
	Host    string    `json:"host"` // its host's process id (wire.EnvHost)
	Started time.Time `json:"started"`
}

func writerPath(logPath string) string { return logPath + ".writer" }

// recordWriter says that this process holds the log's lock now. A failure
// only costs a later second writer its clear message: logged, not fatal.
func recordWriter(logPath string) error {
	data, err := json.Marshal(writer{PID: os.Getpid(), Host: os.Getenv(wire.EnvHost), Started: time.Now().UTC()})
	if err != nil {
		return err
	}
	tmp := writerPath(logPath) + ".tmp"
	if err := os.WriteFile(tmp, append(data, '\n'), 0o600); err != nil {
		return fmt.Errorf("audit log %s: recording its writer: %w", logPath, err)
	}
	if err := os.Rename(tmp, writerPath(logPath)); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("audit log %s: recording its writer: %w", logPath, err)
	}
	return nil
}

// otherHostWriter is the error for a log whose lock another host's process
// holds, or nil when the holder is this host's (a reload) or unknown.
func otherHostWriter(logPath string) error {
	mine := os.Getenv(wire.EnvHost)
	data, err := os.ReadFile(writerPath(logPath))
	if err != nil || mine == "" {
		return nil
	}
	var w writer
	if err := json.Unmarshal(data, &w); err != nil || w.Host == "" || w.Host == mine {
		return nil
	}
	return fmt.Errorf("audit log %s is being written by another host's audit plugin (host process %s, its audit process %d, writing since %s); "+
		"a log has one writer: stop that host, or give this deployment's audit plugin a log of its own (its config's path)",
		logPath, w.Host, w.PID, w.Started.Format(time.RFC3339))
}
