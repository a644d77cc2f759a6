//go:build !unix

package launcher

import (
	"fmt"
	"os"
	"os/exec"
)

// Without process groups there is no launcher: the server is the bridge's
// own child, and a grandchild it starts may outlive a killed bridge.
const Arg = "plugkit-mcp-launch"

const Prefix = "plugkit-mcp-launcher: "

func RunIfLauncher() {
	if len(os.Args) > 1 && os.Args[1] == Arg {
		os.Exit(Main(os.Args[2:]))
	}
}

func Command(argv, env []string) (*exec.Cmd, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = env
	return cmd, nil
}

func Main([]string) int {
	fmt.Fprintln(os.Stderr, Prefix+"not supported on this system")
	return 2
}
