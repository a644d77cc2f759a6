package remote_test

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/plugkit-go/plugkit/internal/testkit/conformance"
	"github.com/plugkit-go/plugkit/internal/testkit/testkit"
	"github.com/plugkit-go/plugkit/remote"
	"github.com/plugkit-go/plugkit/sandbox"
)

// hostSecret is host memory the hostile plugin tries to read.
var hostSecret = []byte("host memory: the host's secret")

var (
	hostileOnce sync.Once
	hostileBin  string
	hostileErr  error
)

// hostilePlugin builds internal/testkit/hostileplugin beside the test plugin, once.
func hostilePlugin(t *testing.T) string {
	t.Helper()
	hostileOnce.Do(func() {
		hostileBin = filepath.Join(filepath.Dir(testPlugin), "hostileplugin")
		hostileErr = testkit.GoBuild(hostileBin, "github.com/plugkit-go/plugkit/internal/testkit/hostileplugin")
	})
	if hostileErr != nil {
		t.Fatal(hostileErr)
	}
	return hostileBin
}

// hostileWorld is what the hostile plugin is let at and what it must not
// reach, planted in a folder of the test. Every file and folder is open to
// everyone (0644, 0755, 0777 where the plugin may write), so that only the
// sandbox, never file permissions, stands in the way.
type hostileWorld struct {
	allowed  string // read: holds ok.txt and link, a symlink to secret
	sibling  string // a sibling of allowed, holding private.txt
	out      string // write
	secret   string // outside everything
	elsewhre string // writable by everyone, outside write
	addr     string // a TCP listener of the test on 127.0.0.1
	accepted *atomic.Int32
}

func newHostileWorld(t *testing.T) *hostileWorld {
	t.Helper()
	dir := t.TempDir()
	// The plugin may run as another user: open the way down to dir.
	for d := dir; d != filepath.Dir(d) && strings.HasPrefix(d, os.TempDir()+"/"); d = filepath.Dir(d) {
		must(t, os.Chmod(d, 0o755))
	}
	must(t, os.Chmod(filepath.Dir(testPlugin), 0o755))
	w := &hostileWorld{
		allowed:  filepath.Join(dir, "data", "public"),
		sibling:  filepath.Join(dir, "data", "private"),
		out:      filepath.Join(dir, "out"),
		secret:   filepath.Join(dir, "secret.txt"),
		elsewhre: filepath.Join(dir, "elsewhere"),
		accepted: &atomic.Int32{},
	}
	for _, d := range []string{w.allowed, w.sibling, w.out, w.elsewhre} {
		must(t, os.MkdirAll(d, 0o755))
	}
	must(t, os.Chmod(w.out, 0o777))
	must(t, os.Chmod(w.elsewhre, 0o777))
	must(t, os.WriteFile(filepath.Join(w.allowed, "ok.txt"), []byte("public data"), 0o644))
	must(t, os.WriteFile(filepath.Join(w.sibling, "private.txt"), []byte("private data"), 0o644))
	must(t, os.WriteFile(w.secret, []byte("the secret"), 0o644))
	must(t, os.Symlink(w.secret, filepath.Join(w.allowed, "link")))

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	w.addr = ln.Addr().String()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			w.accepted.Add(1)
			io.Copy(io.Discard, c)
			c.Close()
		}
	}()
	t.Cleanup(func() { ln.Close(); <-done })
	return w
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// attempt is one thing the hostile plugin tries.
type attempt struct {
	name string
	args map[string]any
	// reached, when set, decides from the plugin's outcome whether the
	// attempt got through (the plugin listening is harmless unless the
	// test can reach it).
	reached func(t *testing.T, o hostileOutcome) bool
}

type hostileOutcome struct {
	Done   bool   `json:"done"`
	Detail string `json:"detail"`
}

func (w *hostileWorld) attempts() []attempt {
	return []attempt{
		{name: "read a secret outside read", args: map[string]any{"what": "read", "path": w.secret}},
		{name: "read in a sibling of an allowed folder", args: map[string]any{"what": "read", "path": filepath.Join(w.sibling, "private.txt")}},
		{name: "read through a symlink pointing out", args: map[string]any{"what": "read", "path": filepath.Join(w.allowed, "link")}},
		{name: "write outside write", args: map[string]any{"what": "write", "path": filepath.Join(w.elsewhre, "x.txt")}},
		{name: "exec /bin/sh", args: map[string]any{"what": "exec"}},
		{name: "connect to 127.0.0.1", args: map[string]any{"what": "connect", "addr": w.addr}},
		{name: "bind a port others can reach", args: map[string]any{"what": "listen"}, reached: func(t *testing.T, o hostileOutcome) bool {
			if !o.Done {
				return false
			}
			c, err := net.DialTimeout("tcp", o.Detail, 3*time.Second)
			if err != nil {
				t.Logf("  listening on %s inside the sandbox, unreachable: %v", o.Detail, err)
				return false
			}
			c.Close()
			return true
		}},
		{name: "fork 1000 processes", args: map[string]any{"what": "fork", "count": 1000}},
		{name: "allocate 512 MiB", args: map[string]any{"what": "allocate", "bytes": 512 << 20}},
		{name: "read the host's memory (ptrace access)", args: map[string]any{"what": "peek", "address": uint64(uintptr(unsafe.Pointer(&hostSecret[0]))), "count": len(hostSecret)}},
		{name: "signal the host", args: map[string]any{"what": "signal"}},
		{name: "read /proc/<host pid>/environ", args: map[string]any{"what": "environ"}},
	}
}

// hostilePolicy is the hostile plugin's sandbox: read allowed, write out,
// no network, limits, and (for a root host) user.
func (w *hostileWorld) policy(user string) *sandbox.Policy {
	return &sandbox.Policy{
		Read:    []string{w.allowed},
		Write:   []string{w.out},
		Network: sandbox.Network{Mode: sandbox.NetworkNone},
		Limits:  sandbox.Limits{Memory: 256 << 20, OpenFiles: 256, Processes: 64, CPU: time.Minute},
		User:    user,
	}
}

func tryHostile(t *testing.T, h *processHost, args map[string]any) (hostileOutcome, bool) {
	t.Helper()
	b, _ := json.Marshal(args)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	r := h.tools.Execute(ctx, "attempt", b, conformance.Caller)
	if !r.OK {
		t.Logf("  call failed: %s", describe(r))
		return hostileOutcome{}, false
	}
	var o hostileOutcome
	if err := json.Unmarshal([]byte(valueOf(r)), &o); err != nil {
		t.Fatalf("outcome %s: %v", valueOf(r), err)
	}
	return o, true
}

// TestSandboxHostilePlugin runs the hostile plugin unconfined, where each of
// its attempts succeeds, and confined, where each fails while its allowed
// work succeeds and the host stays healthy. On a root host it runs confined
// twice: as another user, and as root, where the kernel exempts it from the
// process limit (and the status says so) but every other attempt fails.
func TestSandboxHostilePlugin(t *testing.T) {
	bin := hostilePlugin(t)
	sup := sandbox.Detect(launcherOf(t))
	if sup.LandlockABI < 6 || !sup.NetNS {
		t.Skipf("the kernel cannot confine every part (%s); the sandbox tests need Landlock ABI 6 and network namespaces", sup)
	}
	w := newHostileWorld(t)
	type mode struct {
		name       string
		policy     *sandbox.Policy
		state      string
		unconfined []string // attempts expected to get through confined
	}
	modes := []mode{{name: "unconfined", state: sandbox.StateOff}}
	if os.Geteuid() == 0 {
		if _, err := user.Lookup("nobody"); err != nil {
			t.Fatalf("a root host confines the process limit with user nobody: %v", err)
		}
		asRoot := mode{name: "confined as root", policy: w.policy(""), state: sandbox.StatePartial, unconfined: []string{"fork 1000 processes"}}
		if slices.Contains(sup.CgroupControllers, sandbox.ControllerPids) {
			// Its cgroup's pids.max holds root too.
			asRoot.state, asRoot.unconfined = sandbox.StateEnforced, nil
		}
		modes = append(modes,
			mode{name: "confined as nobody", policy: w.policy("nobody"), state: sandbox.StateEnforced},
			asRoot)
	} else {
		// Without a cgroup, the memory limit is RLIMIT_DATA only (status
		// says so), which refuses the private allocation it tries.
		state := sandbox.StatePartial
		if slices.Contains(sup.CgroupControllers, sandbox.ControllerMemory) {
			state = sandbox.StateEnforced
		}
		modes = append(modes, mode{name: "confined", policy: w.policy(""), state: state})
	}
	if slices.Contains(sup.CgroupControllers, sandbox.ControllerMemory) {
		// The cgroup counts pages, not address space, and RLIMIT_DATA is
		// then not set: reserving 512 MiB and touching two pages of it
		// costs 8 KiB, and goes through. Memory actually used past the
		// limit is stopped (TestAttackSharedMemoryPastLimit, cmd/host).
		for i := range modes {
			if modes[i].policy != nil {
				modes[i].unconfined = append(modes[i].unconfined, "allocate 512 MiB")
			}
		}
	}
	for _, md := range modes {
		t.Run(md.name, func(t *testing.T) {
			h := newBareHost(t, conformance.Config{}, remote.Options{})
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if err := h.m.Load(ctx, remote.Spec{Name: "hostile", Path: bin, Sandbox: md.policy, Restart: testRestart}); err != nil {
				t.Fatalf("load: %v", err)
			}
			st, _ := status(h.m, "hostile")
			if st.Sandbox.State != md.state {
				t.Errorf("status sandbox = %s, want %s", st.Sandbox, md.state)
			}
			pid := st.PID
			before := w.accepted.Load()
			for _, a := range w.attempts() {
				o, ok := tryHostile(t, h, a.args)
				got := ok && o.Done
				if a.reached != nil && ok {
					got = a.reached(t, o)
				}
				want := md.policy == nil || contains(md.unconfined, a.name)
				t.Logf("%-40s done=%-5v %s", a.name, got, o.Detail)
				if got != want {
					t.Errorf("%s: got through = %v, want %v (%s)", a.name, got, want, o.Detail)
				}
			}
			if md.policy != nil && w.accepted.Load() != before {
				t.Errorf("the test's listener was reached from the sandbox")
			}
			// The allowed work, after all that.
			if o, _ := tryHostile(t, h, map[string]any{"what": "read", "path": filepath.Join(w.allowed, "ok.txt")}); !o.Done || o.Detail != "public data" {
				t.Errorf("read of an allowed file: %+v", o)
			}
			if o, _ := tryHostile(t, h, map[string]any{"what": "write", "path": filepath.Join(w.out, md.name+".txt")}); !o.Done {
				t.Errorf("write in the write folder: %+v", o)
			}
			if st, _ := status(h.m, "hostile"); st.PID != pid || st.Restarts != 0 {
				t.Errorf("the plugin's process changed (pid %d → %d, %d restarts): %s", pid, st.PID, st.Restarts, st.LastExit)
			}
		})
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// launcherOf is the launcher the tests' managers use: the test binary.
func launcherOf(t *testing.T) string {
	t.Helper()
	p, err := sandbox.Executable()
	must(t, err)
	return p
}

// TestSandboxExecDeclared: a binary in exec may be run (with its ELF
// interpreter), as a bridged MCP server's interpreter must be; it runs in
// the same sandbox, so what it reads is still confined.
func TestSandboxExecDeclared(t *testing.T) {
	bin := hostilePlugin(t)
	sup := sandbox.Detect(launcherOf(t))
	if sup.LandlockABI < 1 {
		t.Skipf("no Landlock: %s", sup)
	}
	w := newHostileWorld(t)
	h := newBareHost(t, conformance.Config{}, remote.Options{})
	pol := w.policy("")
	pol.Exec = []string{"/bin/sh"}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := h.m.Load(ctx, remote.Spec{Name: "hostile", Path: bin, Sandbox: pol, Restart: testRestart}); err != nil {
		t.Fatalf("load: %v", err)
	}
	if o, _ := tryHostile(t, h, map[string]any{"what": "exec"}); !o.Done || strings.TrimSpace(o.Detail) != "shell" {
		t.Errorf("exec of a declared /bin/sh: %+v", o)
	}
	if o, _ := tryHostile(t, h, map[string]any{"what": "read", "path": w.secret}); o.Done {
		t.Errorf("read of the secret with exec declared: %+v", o)
	}
}
