package sandbox

import (
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The test binary is a launcher too: sandbox's init serves Subcommand.

func TestEnforcement(t *testing.T) {
	full := Support{LandlockABI: 7, NetNS: true, MountNS: true}
	none := Support{LandlockErr: "off", NetNSErr: "denied"}
	cgroups := full
	cgroups.Cgroup, cgroups.CgroupControllers = "v1", []string{ControllerMemory, ControllerPids}
	memoryOnly := cgroups
	memoryOnly.CgroupControllers = []string{ControllerMemory}
	cases := []struct {
		name string
		p    Policy
		s    Support
		euid int
		want string
	}{
		{"everything", Policy{Limits: Limits{Processes: 8}, User: "nobody"}, full, 0, "enforced"},
		{"unprivileged", Policy{Limits: Limits{Processes: 8}}, full, 1000, "enforced"},
		{"root without user", Policy{Limits: Limits{Processes: 8}}, full, 0, "partial (processes not enforced)"},
		{"user without root", Policy{User: "nobody"}, full, 1000, "partial (user not enforced)"},
		{"no namespaces", Policy{}, Support{LandlockABI: 7}, 0, "partial (network, admin_socket not enforced)"},
		{"host network needs none", Policy{Network: Network{Mode: NetworkHost}}, Support{LandlockABI: 7, MountNS: true}, 0, "enforced"},
		{"no mount namespace", Policy{}, Support{LandlockABI: 7, NetNS: true, MountNSErr: "denied"}, 0, "partial (admin_socket not enforced)"},
		{"ports need ABI 4", Policy{Network: Network{Mode: NetworkPorts, Ports: []uint16{443}}}, Support{LandlockABI: 3, NetNS: true, MountNS: true}, 0, "partial (network, ipc not enforced)"},
		{"no Landlock", Policy{}, none, 0, "partial (filesystem, network, admin_socket, ipc not enforced)"},
		{"memory without cgroups", Policy{Limits: Limits{Memory: 1 << 30}}, full, 1000, "partial (memory not enforced)"},
		{"cgroups", Policy{Limits: Limits{Memory: 1 << 30, Processes: 8}}, cgroups, 0, "enforced"},
		{"cgroups without pids", Policy{Limits: Limits{Memory: 1 << 30, Processes: 8}}, memoryOnly, 0, "partial (processes not enforced)"},
	}
	for _, c := range cases {
		if got := c.p.Enforcement(c.s, c.euid).String(); got != c.want {
			t.Errorf("%s: %s, want %s", c.name, got, c.want)
		}
	}
	l := Policy{Limits: Limits{Memory: 256 << 20, Processes: 64, OpenFiles: 128, CPU: time.Minute}}
	want := []string{
		"memory 256MiB: cgroup v1 memory.limit_in_bytes",
		"processes 64: cgroup v1 pids.max, RLIMIT_NPROC (the user's processes)",
		"open_files 128: RLIMIT_NOFILE",
		"cpu 1m0s: RLIMIT_CPU",
	}
	if got := l.Enforcement(cgroups, 0).Limits; !slices.Equal(got, want) {
		t.Errorf("limits with cgroups:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if got := l.Enforcement(full, 1000).Limits; got[0] != "memory 256MiB: RLIMIT_DATA (private data only)" || got[1] != "processes 64: RLIMIT_NPROC (the user's processes)" {
		t.Errorf("limits without cgroups: %q", got)
	}
}

func TestCommandRefusesRequiredGaps(t *testing.T) {
	_, err := Command(Launch{Launcher: "/nonexistent", Policy: Policy{Required: true}, Support: Support{LandlockErr: "off"}, Binary: "/bin/true"})
	if err == nil || !strings.Contains(err.Error(), "filesystem: Landlock is not available (off)") {
		t.Fatalf("err = %v", err)
	}
}

func launcher(tb testing.TB) string {
	tb.Helper()
	p, err := Executable()
	if err != nil {
		tb.Fatal(err)
	}
	return p
}

// TestLaunchConfines starts a shell command through the launcher: it runs,
// and cannot read a file outside what it may read.
func TestLaunchConfines(t *testing.T) {
	self := launcher(t)
	s := Detect(self)
	if s.LandlockABI < 1 || !s.NetNS {
		t.Skipf("kernel: %s", s)
	}
	dir := t.TempDir()
	secret := dir + "/secret"
	if err := os.WriteFile(secret, []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sockets := t.TempDir()
	run := func(p Policy) error {
		cmd, err := Command(Launch{Launcher: self, Policy: p, Support: s, Binary: "/bin/sh", Args: []string{"-c", "read x < " + secret}, SocketDir: sockets})
		if err != nil {
			t.Fatal(err)
		}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Logf("%s", out)
		}
		return err
	}
	if err := run(Policy{Read: []string{dir}}); err != nil {
		t.Errorf("allowed read failed: %v", err)
	}
	other := t.TempDir()
	if err := run(Policy{Read: []string{other}}); err == nil {
		t.Errorf("read outside the sandbox succeeded")
	}
}

// BenchmarkStartDirect and BenchmarkStartConfined start /bin/true directly
// and through the launcher (network and mount namespaces, Landlock,
// rlimits): the difference is what a sandbox adds to a plugin's start.
func BenchmarkStartDirect(b *testing.B) {
	for b.Loop() {
		if err := exec.Command("/bin/true").Run(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkStartConfined(b *testing.B) {
	self := launcher(b)
	s := Detect(self)
	dir, mark := b.TempDir(), b.TempDir()
	for b.Loop() {
		cmd, err := Command(Launch{Launcher: self, Policy: Policy{Limits: Limits{Memory: 256 << 20, OpenFiles: 256}}, Support: s, Binary: "/bin/true", SocketDir: dir, MarkDir: mark})
		if err != nil {
			b.Fatal(err)
		}
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("%v: %s", err, out)
		}
	}
}

// TestLaunchHidesSockets: in the plugin's mount namespace a socket to
// cover is an empty file (connect finds no socket), the mark is mounted,
// and the host's own view is unchanged.
func TestLaunchHidesSockets(t *testing.T) {
	self := launcher(t)
	s := Detect(self)
	if !s.MountNS {
		t.Skipf("kernel: %s", s)
	}
	dir := t.TempDir()
	sock := dir + "/host.sock"
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	mark := t.TempDir()
	script := `[ -S ` + sock + ` ] && echo socket; [ -f ` + sock + ` ] && echo file
while read -r l; do case "$l" in *" - tmpfs ` + MarkSource + ` "*) echo mark;; esac; done < /proc/self/mountinfo
while read -r k v; do case "$k" in CapEff:|CapAmb:) echo "$k$v";; esac; done < /proc/self/status`
	cmd, err := Command(Launch{Launcher: self, Policy: Policy{Read: []string{dir}}, Support: s, Binary: "/bin/sh", Args: []string{"-c", script}, SocketDir: t.TempDir(), Cover: []string{sock, dir + "/absent.sock"}, MarkDir: mark})
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	// The mark shows twice: on its folder, and as the file over the socket.
	got := slices.Compact(strings.Fields(string(out)))
	if len(got) < 2 || !slices.Equal(got[:2], []string{"file", "mark"}) {
		t.Errorf("in the plugin's namespace: %q, want the socket hidden behind a file, and the mark", out)
	}
	// A launcher in a user namespace mounted with CAP_SYS_ADMIN: the
	// plugin must not keep it.
	if os.Geteuid() != 0 && !slices.Equal(got[2:], []string{"CapEff:0000000000000000", "CapAmb:0000000000000000"}) {
		t.Errorf("the plugin's capabilities: %q, want none", got[2:])
	}
	if fi, err := os.Lstat(sock); err != nil || fi.Mode().Type() != os.ModeSocket {
		t.Errorf("the host's socket: %v %v", fi, err)
	}
	if entries, _ := os.ReadDir(mark); len(entries) != 0 {
		t.Errorf("the mark's folder is not empty in the host's namespace: %v", entries)
	}
}

// TestLaunchHidesSocketsUnprivileged runs TestLaunchHidesSockets again as
// another user than root, when the tests run as root (as in CI): the
// launcher then has its mount namespace inside a user namespace, and the
// plugin must end up without the capability it mounted with.
func TestLaunchHidesSocketsUnprivileged(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("runs as root only: TestLaunchHidesSockets already runs unprivileged")
	}
	if os.Getenv("CONFINE_UNPRIVILEGED") != "" {
		t.Skip("already the unprivileged run")
	}
	// A copy of the test binary, and a temporary folder, that the
	// other user can use.
	dir, err := os.MkdirTemp("", "confine-unprivileged-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	tmp := filepath.Join(dir, "tmp")
	if err := errors.Join(os.Chmod(dir, 0o755), os.Mkdir(tmp, 0o777), os.Chmod(tmp, 0o1777)); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "sandbox.test")
	src, err := os.ReadFile(launcher(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, src, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-test.run=^TestLaunchHidesSockets$", "-test.v")
	cmd.Env = []string{"TMPDIR=" + tmp, "HOME=" + tmp, "CONFINE_UNPRIVILEGED=1", "PATH=/usr/bin:/bin"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	t.Logf("as uid 65534:\n%s", out)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(out), "--- SKIP") {
		t.Skip("the kernel gives an unprivileged launcher no mount namespace")
	}
}
