//go:build !unix

package main

import (
	"fmt"
	"os"
	"os/exec"
)

// Without process groups there is no launcher: the server is the bridge's
// own child, and a grandchild it starts may outlive a killed bridge.
const launcherArg = "plugkit-mcp-launch"

const launcherPrefix = "plugkit-mcp-launcher: "

func launcherCommand(argv, env []string) (*exec.Cmd, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = env
	return cmd, nil
}

func launch([]string) int {
	fmt.Fprintln(os.Stderr, launcherPrefix+"not supported on this system")
	return 2
}
