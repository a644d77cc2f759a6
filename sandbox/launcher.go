package sandbox

import (
	"debug/elf"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"

	"github.com/landlock-lsm/go-landlock/landlock"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// RunIfLauncher serves Subcommand when the process was started as the
// launcher (os.Args[1] is Subcommand) and never returns then; otherwise it
// returns at once. A binary that starts sandboxed plugins through itself
// (the host, a test binary in its TestMain) calls it before anything else;
// the host imports package sandbox/early, which calls it while the binary
// initializes. Importing sandbox alone never ends a process.
func RunIfLauncher() {
	if len(os.Args) > 1 && os.Args[1] == Subcommand {
		os.Exit(Main(os.Args[2:]))
	}
}

// exitLaunch is the launcher's exit status when it cannot confine or start
// the plugin (the shell's "cannot execute").
const exitLaunch = 126

// Main is the launcher: args are SPEC BINARY [ARGS...]. It confines the
// process as SPEC says and execs BINARY; it returns only on failure, with
// the exit status, having said why on stderr.
func Main(args []string) int {
	if len(args) == 1 && args[0] == probeArg {
		return 0
	}
	if len(args) == 1 && args[0] == probeMountArg {
		if err := makePrivate(); err != nil {
			fmt.Fprintln(os.Stderr, err.Error())
			return exitLaunch
		}
		return 0
	}
	if err := launch(args); err != nil {
		fmt.Fprintln(os.Stderr, "sandbox: "+err.Error())
		return exitLaunch
	}
	return 0 // not reached: launch execs
}

func launch(args []string) error {
	if len(args) < 2 {
		return errors.New("usage: " + Subcommand + " SPEC BINARY [ARGS...]")
	}
	var s spec
	if err := json.Unmarshal([]byte(args[0]), &s); err != nil {
		return fmt.Errorf("bad spec: %w", err)
	}
	if args[1] != s.Binary {
		return fmt.Errorf("binary %q is not the one the spec names", args[1])
	}
	// Into the plugin's cgroup before anything else: whatever the plugin
	// starts is counted there from its first instruction.
	if err := joinCgroups(s.Cgroups); err != nil {
		return err
	}
	// The plugin starts with stdin, stdout, stderr and the descriptors it
	// is given, nothing the host may have inherited from whoever started it.
	if err := CloseOnExecFrom(3 + s.Inherit); err != nil {
		return err
	}
	// Everything from here to the exec happens on this thread.
	runtime.LockOSThread()
	// The egress proxy's listener before Landlock, which refuses binds,
	// and before the capability it needs is dropped.
	if s.ProxyFD > 0 {
		if err := egressListener(s.ProxyFD, s.ProxyPort); err != nil {
			return err
		}
		if !s.MountNS {
			if err := dropCaps(); err != nil {
				return err
			}
		}
	}
	// Mounts first: Landlock forbids them, and a switch of user drops the
	// privilege they need.
	if s.MountNS {
		if err := hide(s.MarkDir, s.Cover); err != nil {
			return err
		}
	}
	if err := setLimits(s.Limits, s.CgroupMemory); err != nil {
		return err
	}
	if err := restrict(s); err != nil {
		return err
	}
	if s.UID >= 0 {
		if err := syscall.Setgroups(nil); err != nil {
			return fmt.Errorf("setgroups: %w", err)
		}
		if err := syscall.Setgid(s.GID); err != nil {
			return fmt.Errorf("setgid %d: %w", s.GID, err)
		}
		if err := syscall.Setuid(s.UID); err != nil {
			return fmt.Errorf("setuid %d: %w", s.UID, err)
		}
	}
	// A change of user clears the parent-death signal, so it is set last;
	// the SDK sets its own once the plugin runs. If the host died before
	// this point, nothing would tell the plugin.
	if err := unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(syscall.SIGKILL), 0, 0, 0); err != nil {
		return fmt.Errorf("parent-death signal: %w", err)
	}
	if os.Getppid() != s.Parent {
		return errors.New("the host has exited")
	}
	argv := append([]string{s.Binary}, args[2:]...)
	if err := syscall.Exec(s.Binary, argv, goMemLimit(os.Environ(), s.Limits.Memory)); err != nil {
		return fmt.Errorf("exec %s: %w", s.Binary, err)
	}
	return nil
}

// goMemLimit adds GOMEMLIMIT to a plugin's environment (unless it sets its
// own) at 90% of its memory limit, so that a Go plugin collects garbage
// before its cgroup's limit is reached rather than being killed there.
func goMemLimit(env []string, memory uint64) []string {
	if memory == 0 {
		return env
	}
	for _, kv := range env {
		if strings.HasPrefix(kv, "GOMEMLIMIT=") {
			return env
		}
	}
	return append(env, "GOMEMLIMIT="+strconv.FormatUint(memory/10*9, 10))
}

// setLimits sets the rlimits of l. RLIMIT_DATA is left out when the cgroup
// bounds memory: it counts address space, not pages, and every thread's
// stack reserves 8 MiB of it (glibc's default, from RLIMIT_STACK), so a
// plugin of many threads (a Go plugin built with cgo under load) failed to
// start a thread and aborted far below its limit.
func setLimits(l Limits, cgroupMemory bool) error {
	set := func(what string, res int, v uint64) error {
		if v == 0 {
			return nil
		}
		if err := unix.Setrlimit(res, &unix.Rlimit{Cur: v, Max: v}); err != nil {
			return fmt.Errorf("limit %s to %d: %w", what, v, err)
		}
		return nil
	}
	data := l.Memory
	if cgroupMemory {
		data = 0
	}
	cpu := uint64(0)
	if l.CPU > 0 {
		cpu = uint64(math.Ceil(l.CPU.Seconds()))
	}
	return errors.Join(
		set("memory", unix.RLIMIT_DATA, data),
		set("open_files", unix.RLIMIT_NOFILE, l.OpenFiles),
		set("processes", unix.RLIMIT_NPROC, l.Processes),
		set("cpu", unix.RLIMIT_CPU, cpu),
	)
}

// Landlock access rights, by what a rule grants.
const (
	accRead  = ll.AccessFSReadFile | ll.AccessFSReadDir
	accExec  = ll.AccessFSExecute | accRead
	accWrite = accRead | ll.AccessFSWriteFile | ll.AccessFSTruncate | ll.AccessFSRemoveDir |
		ll.AccessFSRemoveFile | ll.AccessFSMakeDir | ll.AccessFSMakeReg | ll.AccessFSMakeSock |
		ll.AccessFSMakeFifo | ll.AccessFSMakeSym | ll.AccessFSRefer
	// accFile is what a rule on a file (not a folder) may grant.
	accFile = ll.AccessFSExecute | ll.AccessFSReadFile | ll.AccessFSWriteFile | ll.AccessFSTruncate | ll.AccessFSIoctlDev

	handledFS  = landlock.AccessFSSet((1 << 16) - 1) // every right of ABI 7
	handledNet = landlock.AccessNetSet(ll.AccessNetBindTCP | ll.AccessNetConnectTCP)
	scoped     = landlock.ScopedSet(ll.ScopeAbstractUnixSocket | ll.ScopeSignal)
)

// systemRead is what every process needs to run: shared libraries and
// the loader's cache, the time zone, random numbers. Missing ones are
// skipped.
var systemRead = []string{"/usr", "/lib", "/lib64", "/lib32", "/etc/ld.so.cache", "/etc/localtime", "/dev/urandom", "/dev/random"}

// restrict applies Landlock (with no_new_privs) to the launcher, which the
// plugin inherits across exec.
func restrict(s spec) error {
	var rules []landlock.Rule
	add := func(access landlock.AccessFSSet, paths ...string) error {
		for _, p := range paths {
			r, err := pathRule(access, p)
			if err != nil {
				return err
			}
			if r != nil {
				rules = append(rules, r)
			}
		}
		return nil
	}
	exe := append([]string{s.Binary}, s.Exec...)
	for _, x := range exe {
		exe = append(exe, scriptInterpreters(x)...)
	}
	for _, x := range exe {
		if in := interpreter(x); in != "" {
			exe = append(exe, in)
		}
	}
	self := fmt.Sprintf("/proc/%d", os.Getpid()) // /proc/self, which exec keeps
	// Write paths are opened and checked here, in the process that is
	// confined, and granted by descriptor (openChecked).
	write := make([]string, 0, len(s.Write))
	for _, w := range s.Write {
		name, done, err := openChecked(w, s.Guarded)
		if err != nil {
			return err
		}
		defer done()
		if name != "" {
			write = append(write, name)
		}
	}
	if err := errors.Join(
		add(accRead, systemRead...),
		add(accRead, self),
		add(accRead|ll.AccessFSWriteFile|ll.AccessFSTruncate, "/dev/null"),
		add(accExec, exe...),
		add(accRead, s.Read...),
		add(accWrite, write...),
		add(accWrite, s.SocketDir),
	); err != nil {
		return err
	}
	net := landlock.AccessNetSet(0)
	switch s.Network.Mode {
	case NetworkNone, "":
		net = handledNet
	case NetworkPorts:
		net = handledNet
		for _, p := range s.Network.Ports {
			rules = append(rules, landlock.ConnectTCP(p))
		}
	case NetworkEgress:
		// The proxy's port only (in the namespace, nothing else is there
		// to reach; without one, this is all that holds TCP to the proxy).
		net = handledNet
		rules = append(rules, landlock.ConnectTCP(s.ProxyPort))
	}
	c := landlock.Config{HandledAccessFS: handledFS, HandledAccessNet: net, Scoped: scoped}
	if !s.Strict {
		c = c.BestEffort()
	}
	// Only this thread is restricted (launch holds it until the exec,
	// which keeps its credentials): no need to stop every thread of the
	// launcher to apply it to them all.
	fd, flags, err := c.NewRulesetFD(rules...)
	if err != nil {
		return fmt.Errorf("landlock: %w", err)
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("no_new_privs: %w", err)
	}
	if fd < 0 {
		return nil // no Landlock on this kernel: best effort
	}
	defer syscall.Close(fd)
	if err := ll.LandlockRestrictSelf(fd, flags); err != nil {
		return fmt.Errorf("landlock: %w", err)
	}
	return nil
}

// pathRule grants access to the hierarchy at p (file rights only, when p
// is a file); nil when p does not exist.
func pathRule(access landlock.AccessFSSet, p string) (landlock.Rule, error) {
	info, err := os.Stat(p)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if !info.IsDir() {
		access &= accFile
	}
	return landlock.PathAccess(access, p), nil
}

// scriptInterpreters returns what the kernel runs to run a script: the
// program on its "#!" line and, for "#!/usr/bin/env NAME", the program env
// finds for NAME where it looks when the environment has no PATH (/bin,
// then /usr/bin: a plugin gets no PATH from the host unless its sandbox
// declares one). Nil for anything that is not a script.
func scriptInterpreters(path string) []string {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	head := make([]byte, 256)
	n, _ := f.Read(head)
	line, _, _ := strings.Cut(string(head[:n]), "\n")
	rest, ok := strings.CutPrefix(line, "#!")
	if !ok {
		return nil
	}
	fields := strings.Fields(rest)
	if len(fields) == 0 {
		return nil
	}
	out := []string{fields[0]}
	if filepath.Base(fields[0]) == "env" {
		for _, arg := range fields[1:] {
			if strings.HasPrefix(arg, "-") || strings.Contains(arg, "=") {
				continue
			}
			for _, dir := range []string{"/bin", "/usr/bin"} {
				if p, err := filepath.EvalSymlinks(filepath.Join(dir, arg)); err == nil {
					out = append(out, p)
					break
				}
			}
			break
		}
	}
	return out
}

// interpreter returns the ELF interpreter (dynamic loader) of a binary, ""
// for a static binary, a folder or a script.
func interpreter(path string) string {
	f, err := elf.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type != elf.PT_INTERP {
			continue
		}
		b := make([]byte, p.Filesz)
		if _, err := p.ReadAt(b, 0); err != nil {
			return ""
		}
		return strings.TrimRight(string(b), "\x00")
	}
	return ""
}
