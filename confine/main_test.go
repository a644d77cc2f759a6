package confine

import (
	"os"
	"testing"
)

// TestMain: the test binary is the launcher of the commands the tests
// confine.
func TestMain(m *testing.M) {
	RunIfLauncher()
	os.Exit(m.Run())
}
