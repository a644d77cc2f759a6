package remote_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/plugkit-go/plugkit/internal/testkit/procs"
	"github.com/plugkit-go/plugkit/internal/testkit/testenv"
	"github.com/plugkit-go/plugkit/internal/testkit/testkit"

	"github.com/plugkit-go/plugkit/sandbox"
)

// The tests of this package run plugins as real processes: TestMain builds
// internal/testkit/testplugin once with `go build` (CI needs nothing but go), and
// re-runs the test binary itself as a tiny host for the test that kills a
// host (roleEnv).

// roleEnv makes the test binary play another part.
const roleEnv = "PLUGKIT_REMOTE_TEST_ROLE"

// pluginBinEnv passes the test plugin's path to a helper host.
const pluginBinEnv = "PLUGKIT_REMOTE_TEST_PLUGIN"

// testPlugin is the path of the built internal/testkit/testplugin binary.
var testPlugin string

func TestMain(m *testing.M) {
	// The test binary is the launcher of sandboxed plugins.
	sandbox.RunIfLauncher()
	if os.Getenv(roleEnv) == "host" {
		runHelperHost()
		os.Exit(0)
	}
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "plugkit-remote-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "temp dir:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	testPlugin = filepath.Join(dir, "testplugin")
	if err := buildTestPlugin(testPlugin); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}

	code := m.Run()

	// No test may leave a plugin process behind.
	left := waitNoPlugins(testPlugin, 3*time.Second)
	if script, err := filepath.Abs(filepath.Join("..", "internal", "testkit", "pytestplugin", "testplugin.py")); err == nil {
		left = append(left, waitNoPlugins(script, time.Second)...)
	}
	if len(left) > 0 {
		fmt.Fprintf(os.Stderr, "plugin processes left running after the tests: %v\n", left)
		for _, pid := range left {
			_ = killPid(pid)
		}
		code = 1
	}
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	return code
}

// buildTestPlugin builds internal/testkit/testplugin into out.
func buildTestPlugin(out string) error {
	return testkit.GoBuild(out, "github.com/plugkit-go/plugkit/internal/testkit/testplugin")
}

// pluginPids returns the live processes running bin (procs.Running).
func pluginPids(bin string) []int { return procs.Running(bin) }

// waitNoPlugins waits up to d for every process running bin to end and
// returns those still running.
func waitNoPlugins(bin string, d time.Duration) []int {
	var left []int
	testkit.Eventually(d, func() bool {
		left = pluginPids(bin)
		return len(left) == 0
	})
	return left
}

// pythonPlugin returns the path of internal/testkit/pytestplugin's plugin, once
// Python 3 with grpcio and protobuf is there (testenv.NeedPython).
func pythonPlugin(t testing.TB) string {
	t.Helper()
	testenv.NeedPython(t)
	path, err := filepath.Abs(filepath.Join("..", "internal", "testkit", "pytestplugin", "testplugin.py"))
	if err != nil {
		t.Fatal(err)
	}
	return path
}
