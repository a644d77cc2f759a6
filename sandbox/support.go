package sandbox

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"

	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// Support is what the running kernel offers for confinement.
type Support struct {
	// LandlockABI is the Landlock ABI version, 0 without Landlock.
	LandlockABI int `json:"landlock_abi"`
	// LandlockErr says why Landlock is unavailable.
	LandlockErr string `json:"landlock_error,omitempty"`
	// NetNS reports whether the launcher can be started in a network
	// namespace of its own (with a user namespace when the host is not
	// root); NetNSErr says why not.
	NetNS    bool   `json:"network_namespace"`
	NetNSErr string `json:"network_namespace_error,omitempty"`
	// UserNS reports whether a user namespace was needed for NetNS.
	UserNS bool `json:"user_namespace"`
	// MountNS reports whether the launcher can have a mount namespace of
	// its own, with private mounts (it hides the admin sockets there);
	// MountNSErr says why not.
	MountNS    bool   `json:"mount_namespace"`
	MountNSErr string `json:"mount_namespace_error,omitempty"`
	// Cgroup is the cgroup version ("v1", "v2") in which the host gives
	// each sandboxed plugin process a cgroup of its own, and
	// CgroupControllers the controllers it can set there (memory, pids);
	// "" when it cannot, and CgroupErr says why.
	Cgroup            string   `json:"cgroup,omitempty"`
	CgroupControllers []string `json:"cgroup_controllers,omitempty"`
	CgroupErr         string   `json:"cgroup_error,omitempty"`
}

// cgroupHas reports whether plugins' cgroups have controller c.
func (s Support) cgroupHas(c string) bool { return slices.Contains(s.CgroupControllers, c) }

func (s Support) landlockWhy() string { return why(s.LandlockErr) }

// String is one line for `host validate`.
func (s Support) String() string {
	var b strings.Builder
	if s.LandlockABI > 0 {
		fmt.Fprintf(&b, "Landlock ABI %d", s.LandlockABI)
	} else {
		b.WriteString("no Landlock" + s.landlockWhy())
	}
	b.WriteString("; ")
	switch {
	case s.NetNS && s.UserNS:
		b.WriteString("network namespaces (in a user namespace)")
	case s.NetNS:
		b.WriteString("network namespaces")
	default:
		b.WriteString("no network namespaces" + why(s.NetNSErr))
	}
	if s.MountNS {
		b.WriteString("; mount namespaces")
	} else {
		b.WriteString("; no mount namespaces" + why(s.MountNSErr))
	}
	if s.Cgroup != "" {
		b.WriteString("; cgroup " + s.Cgroup + " (" + strings.Join(s.CgroupControllers, ", ") + ")")
	} else {
		b.WriteString("; no cgroups" + why(s.CgroupErr))
	}
	return b.String()
}

var (
	detectMu   sync.Mutex
	detected   = map[string]Support{}
	landlockOK = sync.OnceValues(ll.LandlockGetABIVersion)
)

// Detect reports what the kernel supports. It starts launcher (the binary
// that serves Subcommand) once in the namespaces Command would use, so the
// answer is what a plugin launch will get; the result is kept per launcher.
func Detect(launcher string) Support {
	detectMu.Lock()
	defer detectMu.Unlock()
	if s, ok := detected[launcher]; ok {
		return s
	}
	var s Support
	if v, err := landlockOK(); err != nil {
		s.LandlockErr = err.Error()
	} else {
		s.LandlockABI = v
	}
	s.UserNS = os.Geteuid() != 0
	probe := func(arg string, mount bool) string {
		cmd := exec.Command(launcher, Subcommand, arg)
		cmd.Env = []string{}
		cmd.SysProcAttr = namespaces(true, mount, false)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Run(); err != nil {
			if msg := strings.TrimSpace(stderr.String()); msg != "" {
				return msg
			}
			return err.Error()
		}
		return ""
	}
	// Both namespaces at once, as a launch makes them; when that fails,
	// the network namespace alone, to tell which the kernel refuses.
	if msg := probe(probeMountArg, true); msg == "" {
		s.NetNS, s.MountNS = true, true
	} else if s.MountNSErr = msg; probe(probeArg, false) == "" {
		s.NetNS = true
	} else {
		s.NetNSErr = msg
		s.UserNS = false
	}
	cgroupSupport(&s)
	detected[launcher] = s
	return s
}

// namespaces is how the launcher is cloned: in a network namespace of its
// own when isolated, in a mount namespace of its own when mount, inside a
// user namespace (mapping the host's ids to themselves, so the plugin
// holds no capability after exec) when the host is not root, which cannot
// make either otherwise.
func namespaces(isolated, mount, netAdmin bool) *syscall.SysProcAttr {
	attr := &syscall.SysProcAttr{}
	if isolated {
		attr.Cloneflags |= syscall.CLONE_NEWNET
	}
	if mount {
		attr.Cloneflags |= syscall.CLONE_NEWNS
	}
	if attr.Cloneflags == 0 {
		return attr
	}
	if uid := os.Geteuid(); uid != 0 {
		gid := os.Getegid()
		attr.Cloneflags |= syscall.CLONE_NEWUSER
		attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}}
		attr.GidMappings = []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}}
		attr.GidMappingsEnableSetgroups = false
		if mount {
			// The ids map to themselves, so the launcher would lose every
			// capability at its exec; it keeps CAP_SYS_ADMIN in the new
			// user namespace, to mount, and drops it before the plugin's.
			attr.AmbientCaps = []uintptr{unix.CAP_SYS_ADMIN}
		}
		if netAdmin && isolated {
			// Likewise CAP_NET_ADMIN, to bring the namespace's loopback
			// interface up for the egress proxy's listener.
			attr.AmbientCaps = append(attr.AmbientCaps, unix.CAP_NET_ADMIN)
		}
	}
	return attr
}
