package remote

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"

	"github.com/hashicorp/go-plugin/runner"
)

// processRunner starts a plugin's command as go-plugin's default runner
// does. It exists because go-plugin keeps its sockets (the plugin's, and
// the host's callback listener) in a folder of the host's choosing, and
// removes that folder with the process, only when the runner is given as
// ClientConfig.RunnerFunc; without one, the host's listeners go in the
// system's temporary folder.
type processRunner struct {
	cmd            *exec.Cmd
	stdout, stderr io.ReadCloser
}

var _ runner.Runner = (*processRunner)(nil)

func newProcessRunner(cmd *exec.Cmd) (*processRunner, error) {
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	return &processRunner{cmd: cmd, stdout: stdout, stderr: stderr}, nil
}

func (r *processRunner) Start(context.Context) error { return r.cmd.Start() }
func (r *processRunner) Wait(context.Context) error  { return r.cmd.Wait() }

func (r *processRunner) Kill(context.Context) error {
	if r.cmd.Process == nil {
		return nil
	}
	if err := r.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	return nil
}

func (r *processRunner) Stdout() io.ReadCloser { return r.stdout }
func (r *processRunner) Stderr() io.ReadCloser { return r.stderr }
func (r *processRunner) Name() string          { return r.cmd.Path }

func (r *processRunner) ID() string {
	if r.cmd.Process == nil {
		return ""
	}
	return fmt.Sprint(r.cmd.Process.Pid)
}

func (r *processRunner) Diagnose(context.Context) string {
	return "the plugin exited or printed something other than the go-plugin handshake line"
}

// Addresses are the same on both sides of a local process.
func (r *processRunner) PluginToHost(network, addr string) (string, string, error) {
	return network, addr, nil
}

func (r *processRunner) HostToPlugin(network, addr string) (string, string, error) {
	return network, addr, nil
}
