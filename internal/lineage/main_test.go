package lineage

import (
	"os"
	"testing"

	"github.com/plugkit-go/plugkit/confine"
)

// TestMain: the test binary is the launcher of the sandboxed shell the
// tests start.
func TestMain(m *testing.M) {
	confine.RunIfLauncher()
	os.Exit(m.Run())
}
