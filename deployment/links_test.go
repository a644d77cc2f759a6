package deployment

import (
	"os/exec"
	"strings"
	"testing"
)

// TestLinksNoRuntime: reading a deployment file is plain data and
// diagnostics; it links nothing of the runtime (the host turns the data
// into the plugin manager's specs). A new import that pulls the runtime in
// fails here.
func TestLinksNoRuntime(t *testing.T) {
	t.Parallel()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to list the package's dependencies: %v", err)
	}
	out, err := exec.Command(goTool, "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	const mod = "github.com/plugkit-go/plugkit/"
	forbidden := []string{mod + "remote", mod + "pipeline", mod + "kernel", mod + "host",
		"github.com/hashicorp/go-plugin", "google.golang.org/grpc"}
	for _, dep := range strings.Fields(string(out)) {
		for _, f := range forbidden {
			if dep == f || strings.HasPrefix(dep, f+"/") {
				t.Errorf("deployment links %s", dep)
			}
		}
	}
}
