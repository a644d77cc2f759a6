package sdk

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"
)

// roleEnv makes the test binary play another part: the process tests run it
// as a plugin (and as a host that starts one), as go-plugin's own tests do,
// so they need nothing but `go test`.
const roleEnv = "PLUGKIT_SDK_TEST_ROLE"

func TestMain(m *testing.M) {
	switch os.Getenv(roleEnv) {
	case "plugin":
		Serve(processTestPlugin(true))
		os.Exit(0)
	case "quiet-plugin":
		Serve(processTestPlugin(false))
		os.Exit(0)
	case "bad-plugin":
		Serve(Plugin[struct{}]{Inject: []string{""}})
		os.Exit(0) // not reached: Serve exits 1
	case "host":
		runTestHost()
		os.Exit(0)
	}
	os.Exit(runTests(m))
}

// runTests runs the tests with TMPDIR set to a folder of their own, removed
// at the end: the plugin processes they start (and the orphan test's host,
// killed with SIGKILL) make go-plugin's sockets there, which a killed
// process cannot remove.
func runTests(m *testing.M) int {
	dir, err := os.MkdirTemp("", "plugkit-sdk-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	if err := os.Setenv("TMPDIR", dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if code := m.Run(); code != 0 {
		return code
	}
	if err := goleak.Find(); err != nil {
		fmt.Fprintln(os.Stderr, "goleak:", err)
		return 1
	}
	return 0
}
