package host

import (
	"os"
	"testing"

	"github.com/plugkit-go/plugkit/confine"
)

// TestMain: the test binary is the launcher of the sandboxed plugins the
// tests start, and what the sandbox probe runs.
func TestMain(m *testing.M) {
	confine.RunIfLauncher()
	os.Exit(m.Run())
}
