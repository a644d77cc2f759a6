package remote

import (
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"

	"github.com/plugkit-go/plugkit/kernel"
	"github.com/plugkit-go/plugkit/sandbox"
)

// How a plugin process ended, and the errors that say so.

// exitReason says how the process ended: "exit status 3", "killed by
// signal: killed". Call it only once client.Exited() is closed: go-plugin
// closes it (cancels the context behind it) after cmd.Wait has returned, and
// after its stderr reader has read to the end, so ProcessState is set and the
// stderr tail is complete.
func (in *instance) exitReason() string {
	ps := in.cmd.ProcessState
	why := describeExit(ps)
	switch {
	case in.oomKilled():
		why += " (out of memory: the kernel killed it at its sandbox's limit, memory = " + sandbox.Bytes(in.spec.Sandbox.Limits.Memory) + ")"
	case ps != nil && !ps.Success() && in.cgroup.LimitReached():
		// It may have died of a refusal at the limit (a thread it could
		// not start) rather than by the kernel's hand.
		why += " (it had reached its sandbox's memory limit, memory = " + sandbox.Bytes(in.spec.Sandbox.Limits.Memory) + ")"
	}
	return why
}

// oomKilled reports whether the exited process was killed for reaching
// its cgroup's memory limit: a SIGKILL, in a cgroup where the kernel
// killed for memory. Call it before stop, which removes the cgroup.
func (in *instance) oomKilled() bool {
	ps := in.cmd.ProcessState
	if ps == nil || in.cgroup == nil {
		return false
	}
	ws, ok := ps.Sys().(syscall.WaitStatus)
	return ok && ws.Signal() == syscall.SIGKILL && in.cgroup.OOMKills() > 0
}

func describeExit(ps *os.ProcessState) string {
	if ps == nil {
		return "exit status unknown"
	}
	s := ps.String() // "exit status 3", "signal: killed", ...
	if strings.HasPrefix(s, "signal: ") {
		s = "killed by " + s
	}
	return s
}

// exitError is the failure of a plugin process that died while the host
// started it or ran its apply step: how the process ended and the last
// lines of its stderr, which usually say why. Such a failure leaves the
// plugin FAILED, and Status shows both.
type exitError struct {
	err     error
	pid     int
	when    string   // "while starting", "during apply"
	exit    string   // "exit status 3"; "" when not known
	stderr  []string // the tail of its stderr
	telling string   // of those, the line that says why (stderrTail.Telling)
	// sandboxed: the process ran confined, so what it was denied is a
	// likely cause of an exit at start, and the error says so.
	sandboxed bool
}

// newLaunchError adds to err the exit status of a process that failed to
// start and its last stderr line. Call it once go-plugin's Kill has
// returned. A process ended by a signal is not described: go-plugin kills
// the process itself when the handshake fails or times out.
func newLaunchError(err error, cmd *exec.Cmd, tail *stderrTail, sandboxed bool) error {
	if cmd.Process == nil {
		return err // it never started
	}
	e := &exitError{err: err, pid: cmd.Process.Pid, when: "while starting", stderr: tail.Lines(), telling: tail.Telling(), sandboxed: sandboxed}
	if ps := cmd.ProcessState; ps != nil && ps.Exited() {
		e.exit = describeExit(ps)
	}
	if e.exit == "" && len(e.stderr) == 0 {
		return err
	}
	return e
}

// exitError adds to err, the failure of op, how the exited process ended
// and its last stderr line.
func (in *instance) exitError(err error, op string) error {
	return &exitError{err: err, pid: in.pid, when: "during " + op, exit: in.exitReason(), stderr: in.stderr.Lines(), telling: in.stderr.Telling(),
		sandboxed: in.spec.Sandbox != nil}
}

func (e *exitError) Error() string {
	var more []string
	if e.exit != "" {
		more = append(more, e.exit)
	}
	if e.telling != "" {
		more = append(more, "stderr: "+e.telling)
	}
	if e.sandboxed {
		more = append(more, sandboxHint(e.stderr))
	}
	if len(more) == 0 {
		return e.err.Error()
	}
	return e.err.Error() + " (" + strings.Join(more, "; ") + ")"
}

func (e *exitError) Unwrap() error { return e.err }

// sandboxHint names the sandbox as a likely cause of a confined process's
// exit at start: a module, library or file it reads outside its read list
// fails as missing or denied. The first stderr line that says so is quoted.
func sandboxHint(stderr []string) string {
	hint := "the plugin runs in a sandbox: a file, program or port it needs may be outside its sandbox block (read, write, exec, network)"
	for _, l := range stderr {
		for _, sign := range []string{"ermission denied", "ModuleNotFoundError", "No such file or directory", "operation not permitted", "EACCES", "EPERM"} {
			if strings.Contains(l, sign) {
				return hint + "; it reported: " + strings.TrimSpace(l)
			}
		}
	}
	return hint
}

// summary describes the process as Status.LastExit does.
func (e *exitError) summary() string {
	s := "process " + strconv.Itoa(e.pid)
	if e.exit == "" {
		return s + " ended " + e.when
	}
	return s + " exited " + e.when + ": " + e.exit
}

// failedExit returns the exitError that made a scope FAILED, if a process
// that died is what failed it.
func failedExit(s *kernel.Scope, state kernel.State) (*exitError, bool) {
	if s == nil || state != kernel.Failed {
		return nil, false
	}
	var e *exitError
	ok := errors.As(s.Err(), &e)
	return e, ok
}
