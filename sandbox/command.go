package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
)

// Subcommand is the hidden subcommand of the host binary that serves as
// the launcher: `host sandbox-exec SPEC BINARY [ARGS...]`.
const Subcommand = "sandbox-exec"

// probeArg makes the launcher exit 0 at once (Detect).
const probeArg = "--probe"

// Launch is one sandboxed start of a plugin binary.
type Launch struct {
	// Launcher is the binary that serves Subcommand (the host's own).
	Launcher string
	Policy   Policy
	// Support is what the kernel offers (Detect(Launcher)).
	Support Support
	// Binary is the plugin's executable (absolute) and Args its arguments.
	Binary string
	Args   []string
	// SocketDir is the host's private go-plugin socket folder: the plugin
	// creates its socket there.
	SocketDir string
	// Inherit is how many descriptors after stderr the plugin is given
	// (the caller's exec.Cmd.ExtraFiles: its call lanes); every other
	// descriptor is closed at its exec.
	Inherit int
	// Cover lists the admin sockets of running hosts: where the kernel
	// gives the plugin a mount namespace (Support.MountNS), each is hidden
	// there behind an empty read-only file.
	Cover []string
	// MarkDir is the folder the mark (MarkSource) is mounted on in the
	// plugin's mount namespace: one no sandbox may write (the host
	// registry's), since removing it in the host's namespace would
	// unmount the mark everywhere. Without it, no mount namespace is made.
	MarkDir string
	// Cgroup is the process's own cgroup (NewCgroup), which the launcher
	// joins first; nil for none.
	Cgroup *Cgroup
	// HostProxyPort is, for a NetworkEgress policy on a kernel that gives
	// no network namespace, the loopback port of the proxy the host runs
	// for the plugin. With a namespace, the launcher makes the proxy's
	// listener there instead and sends it on the socket the caller passes
	// at ExtraFiles[Inherit] (see EgressInNamespace).
	HostProxyPort uint16
	// Guarded are the host's own folders: a write path that is, or now
	// resolves to, one of them or a folder above one refuses the start
	// (CheckWrite), here and again in the launcher.
	Guarded []Guarded
}

// EgressInNamespace reports whether the launch of a NetworkEgress policy
// makes the proxy's listener in the plugin's network namespace (the caller
// then passes a socket for it, see Launch.HostProxyPort).
func EgressInNamespace(p Policy, s Support) bool {
	return p.Network.Mode == NetworkEgress && s.NetNS
}

// spec is what the launcher is told, as JSON in its first argument.
type spec struct {
	Policy
	Binary    string `json:"binary"`
	SocketDir string `json:"socket_dir"`
	// UID and GID are the user to switch to, -1 to stay.
	UID int `json:"uid"`
	GID int `json:"gid"`
	// Parent is the host's pid: a launcher whose host is gone by the time
	// it would exec the plugin exits instead.
	Parent int `json:"parent"`
	// Strict fails the launch when Landlock cannot enforce every rule.
	Strict bool `json:"strict"`
	// Inherit is how many descriptors from 3 up the plugin keeps.
	Inherit int `json:"inherit,omitempty"`
	// MountNS says the launcher runs in a mount namespace of its own,
	// where it mounts the mark on MarkDir and hides the sockets in Cover.
	MountNS bool     `json:"mount_ns,omitempty"`
	MarkDir string   `json:"mark_dir,omitempty"`
	Cover   []string `json:"cover,omitempty"`
	// Cgroups are the folders of the process's cgroup, joined first.
	Cgroups []string `json:"cgroups,omitempty"`
	// CgroupMemory: the cgroup bounds memory, and RLIMIT_DATA is not set.
	CgroupMemory bool `json:"cgroup_memory,omitempty"`
	// ProxyPort is the only TCP port a NetworkEgress plugin may connect
	// to; ProxyFD, when set, the socket the launcher sends the listener it
	// makes on that port in the plugin's network namespace.
	ProxyPort uint16 `json:"proxy_port,omitempty"`
	ProxyFD   int    `json:"proxy_fd,omitempty"`
	// Guarded are folders no write path may reach, checked on the
	// descriptor that is granted.
	Guarded []Guarded `json:"guarded,omitempty"`
}

// Command returns the command that starts the plugin confined by the
// launch's policy: the launcher, cloned into the namespaces the policy
// needs. The caller sets its environment (the plugin's, which the launcher
// passes on unchanged), working folder and standard streams. Write paths
// that do not exist are made as folders, so that a plugin can be confined
// to a folder it fills itself.
func Command(l Launch) (*exec.Cmd, error) {
	if l.Launcher == "" {
		return nil, errors.New("sandbox: no launcher binary")
	}
	e := l.Policy.Enforcement(l.Support, os.Geteuid())
	if l.Policy.Required && e.State != StateEnforced {
		return nil, fmt.Errorf("sandbox is required but cannot be enforced: %s", gapList(e.Gaps))
	}
	// Before the write folders are made: a missing one under a link to a
	// guarded folder would be made there.
	if err := CheckWrite(l.Policy.Write, l.Guarded); err != nil {
		return nil, err
	}
	s := spec{Policy: l.Policy, Binary: l.Binary, SocketDir: l.SocketDir, UID: -1, GID: -1, Parent: os.Getpid(), Strict: l.Policy.Required, Inherit: l.Inherit, Guarded: l.Guarded}
	if l.Support.MountNS && l.MarkDir != "" {
		s.MountNS, s.MarkDir, s.Cover = true, l.MarkDir, l.Cover
	}
	if l.Cgroup != nil {
		s.Cgroups, s.CgroupMemory = l.Cgroup.Dirs(), l.Cgroup.memory
	}
	if l.Policy.User != "" && os.Geteuid() == 0 {
		uid, gid, err := lookupUser(l.Policy.User)
		if err != nil {
			return nil, err
		}
		s.UID, s.GID = uid, gid
	}
	for _, w := range l.Policy.Write {
		if _, err := os.Lstat(w); errors.Is(err, os.ErrNotExist) {
			if err := os.MkdirAll(w, 0o755); err != nil {
				return nil, fmt.Errorf("sandbox: write folder: %w", err)
			}
			if s.UID >= 0 {
				_ = os.Chown(w, s.UID, s.GID)
			}
		}
	}
	if l.Policy.Network.Mode == NetworkEgress {
		switch {
		case EgressInNamespace(l.Policy, l.Support):
			s.ProxyFD, s.ProxyPort = 3+l.Inherit, ProxyPort
		case l.HostProxyPort != 0:
			s.ProxyPort = l.HostProxyPort
		default:
			return nil, errors.New("sandbox: network egress without a network namespace needs the host's proxy port")
		}
	}
	raw, err := json.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	cmd := exec.Command(l.Launcher, append([]string{Subcommand, string(raw), l.Binary}, l.Args...)...)
	isolated := l.Policy.Network.Mode == NetworkNone || l.Policy.Network.Mode == "" || l.Policy.Network.Mode == NetworkEgress
	cmd.SysProcAttr = namespaces(isolated && l.Support.NetNS, s.MountNS, s.ProxyFD > 0)
	return cmd, nil
}

func gapList(gaps []Gap) string {
	out := ""
	for i, g := range gaps {
		if i > 0 {
			out += "; "
		}
		out += g.String()
	}
	return out
}

// lookupUser resolves a user name (or a numeric uid) to its ids.
func lookupUser(name string) (uid, gid int, err error) {
	u, err := user.Lookup(name)
	if err != nil {
		if _, nerr := strconv.Atoi(name); nerr == nil {
			u, err = user.LookupId(name)
		}
	}
	if err != nil {
		return 0, 0, fmt.Errorf("sandbox: user %q: %w", name, err)
	}
	uid, _ = strconv.Atoi(u.Uid)
	gid, _ = strconv.Atoi(u.Gid)
	return uid, gid, nil
}

// UserIDs resolves a user name (or numeric uid) to its uid and gid.
func UserIDs(name string) (uid, gid int, err error) { return lookupUser(name) }

// Executable is the launcher of a host binary: the running executable.
func Executable() (string, error) {
	p, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("sandbox launcher: %w", err)
	}
	return filepath.Clean(p), nil
}
