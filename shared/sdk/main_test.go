package sdk

import (
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
	goleak.VerifyTestMain(m)
}
