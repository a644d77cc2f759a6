//go:build unix

package launcher

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"syscall"
	"time"
)

// A stdio server does not run as the bridge's own child: the bridge runs its
// own binary as a launcher (argv[1] == Arg), and the launcher runs the
// server in a process group of its own. That is what makes "no server
// outlives the bridge" hold for servers started through npx, uvx or a shell,
// whose real server is a grandchild that no parent-death signal reaches:
//
//  1. the bridge starts the launcher with a parent-death signal (Linux) and
//     its own pid on the command line;
//  2. the launcher starts the server with stdin, stdout and stderr passed
//     straight through (no copying), as the leader of a new process group;
//  3. when the bridge dies (the signal, or a poll of the parent pid that also
//     works where there is no such signal), the launcher SIGKILLs the whole
//     group and exits; a SIGTERM from a living bridge (the MCP SDK's close)
//     is passed on to the group;
//  4. when the server exits, the launcher kills what is left of its group,
//     says how the server ended on stderr (the bridge's cause for calls that
//     fail) and exits with status 1 unless the server succeeded.
//
// The launcher is not reached by the host's handshake: it is only ever run
// by the bridge, never as a plugin.
const Arg = "plugkit-mcp-launch"

// Prefix starts the launcher's own stderr lines, which the bridge reads as
// the cause of the server's end rather than as server output.
const Prefix = "plugkit-mcp-launcher: "

// parentPoll is how often the launcher checks that the bridge is alive.
const parentPoll = 200 * time.Millisecond

// RunIfLauncher serves the launcher when the process was started as one
// (os.Args[1] is Arg) and never returns then; otherwise it returns at once.
// Package early calls it while the binary initializes.
func RunIfLauncher() {
	if len(os.Args) > 1 && os.Args[1] == Arg {
		os.Exit(Main(os.Args[2:]))
	}
}

// Command is the command that runs argv as a server under the launcher,
// with env as its whole environment.
func Command(argv, env []string) (*exec.Cmd, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("cannot find the plugin's own binary to launch the server: %w", err)
	}
	args := append([]string{Arg, strconv.Itoa(os.Getpid()), "--"}, argv...)
	cmd := exec.Command(exe, args...)
	cmd.Env = env
	cmd.SysProcAttr = launcherAttr()
	// Reap the launcher even if a stray grandchild kept a pipe open.
	cmd.WaitDelay = 2 * time.Second
	return cmd, nil
}

// Main is the launcher: args are the bridge's pid, "--", then the server's
// argv. It returns the process's exit status.
func Main(args []string) int {
	say := func(format string, a ...any) { fmt.Fprintf(os.Stderr, Prefix+format+"\n", a...) }
	if len(args) < 3 || args[1] != "--" {
		say("usage: %s BRIDGE_PID -- COMMAND [ARG...]", Arg)
		return 2
	}
	parent, err := strconv.Atoi(args[0])
	if err != nil {
		say("bad bridge pid %q", args[0])
		return 2
	}
	// The parent-death signal was set before this process started
	// (launcherAttr); the bridge may have died before Notify.
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	if os.Getppid() != parent {
		return 1
	}

	srv := exec.Command(args[2], args[3:]...)
	srv.Stdin, srv.Stdout, srv.Stderr = os.Stdin, os.Stdout, os.Stderr
	srv.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := srv.Start(); err != nil {
		say("server did not start: %s", startError(srv.Path, err))
		return 1
	}
	group := srv.Process.Pid
	killGroup := func(sig syscall.Signal) { _ = syscall.Kill(-group, sig) }

	done := make(chan error, 1)
	go func() { done <- srv.Wait() }()
	tick := time.NewTicker(parentPoll)
	defer tick.Stop()
	for {
		select {
		case err := <-done:
			killGroup(syscall.SIGKILL)
			if err != nil {
				say("server exited: %v", err)
				return 1
			}
			say("server exited")
			return 0
		case sig := <-sigs:
			if os.Getppid() != parent {
				killGroup(syscall.SIGKILL)
				return 1
			}
			killGroup(sig.(syscall.Signal))
		case <-tick.C:
			if os.Getppid() != parent {
				killGroup(syscall.SIGKILL)
				return 1
			}
		}
	}
}

// startError is why the server did not start. A program the bridge may not
// run is most often one its sandbox's exec list leaves out (a sandbox
// block that names only what the bridge reads), which "permission denied"
// alone does not tell.
func startError(path string, err error) string {
	if !errors.Is(err, fs.ErrPermission) {
		return err.Error()
	}
	return fmt.Sprintf("%v (if the bridge runs in a sandbox, its exec list must name the program and what it runs: exec = [%q] in the plugin's sandbox block, and read the folders it loads from)", err, path)
}
