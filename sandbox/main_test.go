package sandbox

import (
	"os"
	"testing"
)

// TestMain: the test binary is the launcher of the commands the tests
// sandbox.
func TestMain(m *testing.M) {
	RunIfLauncher()
	os.Exit(m.Run())
}
