package testkit_test

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/plugkit-go/plugkit/internal/testkit/testkit"
)

func TestContextEndsAtItsBound(t *testing.T) {
	ctx := testkit.ContextFor(t, time.Millisecond)
	<-ctx.Done()
	if _, ok := testkit.Context(t).Deadline(); !ok {
		t.Error("Context has no deadline")
	}
}

func TestBufferWrittenWhileRead(t *testing.T) {
	var b testkit.Buffer
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 100 {
				_, _ = b.Write([]byte("ab"))
				_ = b.String()
			}
		}()
	}
	wg.Wait()
	if b.Len() != 800 || strings.Count(b.String(), "ab") != 400 {
		t.Errorf("buffer holds %d bytes, want 800", b.Len())
	}
	b.Reset()
	if b.String() != "" {
		t.Errorf("after Reset: %q", b.String())
	}
}

func TestWaitFor(t *testing.T) {
	var n atomic.Int32
	testkit.WaitFor(t, time.Minute, "three checks", func() bool { return n.Add(1) == 3 })
	if testkit.Eventually(3*testkit.Tick, func() bool { return false }) {
		t.Error("Eventually reports a condition that never held")
	}
}

func TestBinariesBuildOnce(t *testing.T) {
	bins := &testkit.Binaries{Prefix: "testkit-test-", Targets: map[string]string{"tool": "./testdata/tool"}}
	defer bins.Remove()
	bins.Need(t)
	if _, err := os.Stat(bins.Path("tool")); err != nil {
		t.Fatal(err)
	}
	extra := bins.Build(t, "again", "./testdata/tool")
	info, err := os.Stat(extra)
	if err != nil || filepath.Dir(extra) != bins.Dir() {
		t.Fatalf("extra binary %s: %v", extra, err)
	}
	// A second Build of the name does not build again.
	if again := bins.Build(t, "again", "./testdata/tool"); again != extra {
		t.Errorf("second build at %s, first at %s", again, extra)
	}
	if after, _ := os.Stat(extra); !after.ModTime().Equal(info.ModTime()) {
		t.Error("the binary was built twice")
	}
	dir := bins.Dir()
	bins.Remove()
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("after Remove, %s: %v", dir, err)
	}
}

func TestGoBuildSaysWhatFailed(t *testing.T) {
	err := testkit.GoBuild(filepath.Join(t.TempDir(), "x"), "./testdata/no-such-package")
	if err == nil || !strings.Contains(err.Error(), "go build ./testdata/no-such-package") {
		t.Errorf("error %v does not name the package", err)
	}
}

func TestCommand(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	out, errOut, code := testkit.Command(t, time.Minute, dir, "sh", "-c", "pwd -P; echo oops >&2; exit 3")
	if code != 3 || strings.TrimSpace(errOut) != "oops" || strings.TrimSpace(out) != dir {
		t.Errorf("got %q %q exit %d, want %s, oops, exit 3", out, errOut, code, dir)
	}
	if out, _, code := testkit.Command(t, time.Minute, "", "true"); code != 0 || out != "" {
		t.Errorf("true: %q exit %d", out, code)
	}
}
