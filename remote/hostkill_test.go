package remote_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/plugkit-go/plugkit/internal/testkit/conformance"
	"github.com/plugkit-go/plugkit/internal/testkit/testkit"
	"github.com/plugkit-go/plugkit/kernel"
	"github.com/plugkit-go/plugkit/pipeline"
	"github.com/plugkit-go/plugkit/remote"
)

// runHelperHost is the "host" role of the test binary: a tiny host that
// loads one test plugin through remote.Manager, checks that a call reaches
// it, prints "<plugin pid> <socket folder>" and waits to be killed.
func runHelperHost() {
	fail := func(format string, args ...any) {
		fmt.Fprintf(os.Stderr, "helper host: "+format+"\n", args...)
		os.Exit(1)
	}
	k := kernel.New(hclog.NewNullLogger())
	tools := pipeline.New(k, pipeline.Options{})
	if _, err := k.Load(tools.Plugin()); err != nil {
		fail("load tools: %v", err)
	}
	before := socketDirs(os.Getpid())
	m, err := remote.NewManager(k, tools, remote.Options{})
	if err != nil {
		fail("new manager: %v", err)
	}
	cfg, _ := json.Marshal(pluginConfig{Spec: conformance.PluginSpec{Name: "orphan", Tools: []conformance.ToolSpec{addTool("")}}})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	spec := remote.Spec{Name: "orphan", Path: os.Getenv(pluginBinEnv), Config: cfg}
	if os.Getenv(sandboxedEnv) != "" {
		spec.Sandbox = testSandbox(os.TempDir())
	}
	if err := m.Load(ctx, spec); err != nil {
		fail("load: %v", err)
	}
	if r := tools.Execute(ctx, "add", json.RawMessage(`{"a":2,"b":3}`), "client"); !r.OK {
		fail("add: %+v", r)
	}
	st, ok := status(m, "orphan")
	if !ok || st.PID == 0 {
		fail("no plugin pid: %+v", st)
	}
	var dir string
	for _, d := range socketDirs(os.Getpid()) {
		if !strings.Contains(strings.Join(before, "\n"), d) {
			dir = d
		}
	}
	fmt.Println(st.PID, dir)
	select {} // until SIGKILL
}

// socketDirs lists the private socket folders of the host with pid.
func socketDirs(pid int) []string {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), "plugkit-"+strconv.Itoa(pid)+"-*"))
	return dirs
}

// sandboxedEnv makes the helper host confine its plugin.
const sandboxedEnv = "PLUGKIT_REMOTE_TEST_SANDBOXED"

// TestHostKilled SIGKILLs a host (this test binary in the "host" role) and
// checks that its plugin process is gone within one second, and that the
// socket folder the dead host left is removed by the next host's manager.
func TestHostKilled(t *testing.T) { testHostKilled(t, testPlugin, "") }

// TestHostKilledSandboxed is TestHostKilled with the plugin confined: the
// launcher in between keeps the host its parent.
func TestHostKilledSandboxed(t *testing.T) { testHostKilled(t, testPlugin, "1") }

// TestHostKilledPython is TestHostKilled with the plugin written in Python:
// the SDK's parent watch ends it.
func TestHostKilledPython(t *testing.T) { testHostKilled(t, pythonPlugin(t), "") }

func testHostKilled(t *testing.T, plugin, sandboxed string) {
	host := exec.Command(os.Args[0], "-test.run=^$")
	host.Env = append(os.Environ(), roleEnv+"=host", pluginBinEnv+"="+plugin, sandboxedEnv+"="+sandboxed)
	host.Stderr = os.Stderr
	out, err := host.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := host.Start(); err != nil {
		t.Fatal(err)
	}
	killHost := func() {
		_ = host.Process.Signal(syscall.SIGKILL)
		_ = host.Wait()
	}
	lines := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(out).ReadString('\n')
		lines <- line
	}()
	var line string
	select {
	case line = <-lines:
	case <-time.After(30 * time.Second):
		killHost()
		t.Fatal("the helper host printed nothing in 30s")
	}
	var pid int
	var dir string
	if _, err := fmt.Sscan(line, &pid, &dir); err != nil || pid <= 0 {
		killHost()
		t.Fatalf("the helper host printed %q: %v", line, err)
	}
	if processGone(pid) {
		killHost()
		t.Fatalf("plugin %d is not running before its host is killed", pid)
	}

	killed := time.Now()
	killHost()
	for !processGone(pid) {
		if time.Since(killed) > time.Second {
			_ = killPid(pid)
			t.Fatalf("plugin %d still alive one second after its host was SIGKILLed", pid)
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Logf("plugin exited %v after its host was SIGKILLed", time.Since(killed).Round(time.Millisecond))

	// The dead host could not remove its socket folder; the next one does.
	if dir == "" {
		t.Fatal("the helper host reported no socket folder")
	}
	if _, err := os.Stat(dir); err != nil {
		t.Logf("the dead host's socket folder is already gone: %v", err)
	}
	k := kernel.New(hclog.NewNullLogger())
	tools := pipeline.New(k, pipeline.Options{})
	defer tools.Close()
	m, err := remote.NewManager(k, tools, remote.Options{})
	if err != nil {
		t.Fatal(err)
	}
	m.Close(testkit.ContextFor(t, 10*time.Second))
	if _, err := os.Stat(dir); err == nil {
		t.Errorf("the dead host's socket folder %s is still there after a new manager started", dir)
	}
}
