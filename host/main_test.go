package host

import (
	"os"
	"testing"

	"github.com/plugkit-go/plugkit/sandbox"
)

// TestMain: the test binary is the launcher of the sandboxed plugins the
// tests start, and what the sandbox probe runs.
func TestMain(m *testing.M) {
	sandbox.RunIfLauncher()
	os.Exit(m.Run())
}
