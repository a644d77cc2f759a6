package remote

import (
	"errors"
	"fmt"
	"os/exec"
	"strings"
)

// unrecognized starts go-plugin's error for a first stdout line that is not
// its handshake, which is also what it says when the process exits before
// writing one.
const unrecognized = "Unrecognized remote plugin message: "

// startFailure rewords go-plugin's start error when a better reason is at
// hand. A process that exited without a line on stdout gave
// "Unrecognized remote plugin message: Failed to read any lines from
// plugin's stdout" in front of every start failure, where the exit status
// and stderr (added by newLaunchError) say why; a process that printed
// something else is quoted. Call it once go-plugin's Kill has returned.
func startFailure(err error, cmd *exec.Cmd) error {
	msg := err.Error()
	if e := protocolMismatch(msg); e != nil {
		return e
	}
	if !strings.HasPrefix(msg, unrecognized) {
		return err
	}
	line, _, _ := strings.Cut(strings.TrimPrefix(msg, unrecognized), "\n")
	line = strings.TrimSpace(line)
	if line == "" || strings.HasPrefix(line, "Failed to read any lines") {
		if cmd.ProcessState != nil {
			return errors.New("the process exited before its handshake")
		}
		return errors.New("the process wrote no handshake line on stdout")
	}
	return fmt.Errorf("its first line on stdout was %q, not the go-plugin handshake (a plugin must print nothing on stdout before it serves)", line)
}
