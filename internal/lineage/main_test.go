package lineage

import (
	"os"
	"testing"

	"github.com/plugkit-go/plugkit/sandbox"
)

// TestMain: the test binary is the launcher of the sandboxed shell the
// tests start.
func TestMain(m *testing.M) {
	sandbox.RunIfLauncher()
	os.Exit(m.Run())
}
