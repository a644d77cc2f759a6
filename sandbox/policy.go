package sandbox

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Policy is what one plugin process may do. The zero Policy confines to the
// minimum: no declared folders, no network, no limits beyond the system's.
type Policy struct {
	// Read lists absolute paths (files or folders) the plugin may read.
	Read []string `json:"read,omitempty"`
	// Write lists absolute paths it may read and write (create, remove).
	Write []string `json:"write,omitempty"`
	// Exec lists absolute paths (binaries or folders of them) it may
	// execute, besides its own binary: a bridged MCP server's interpreter.
	Exec    []string `json:"exec,omitempty"`
	Network Network  `json:"network"`
	Limits  Limits   `json:"limits"`
	// Env is added to the plugin's environment (which holds nothing of the
	// host's, only what go-plugin and the host hand every plugin).
	Env map[string]string `json:"-"`
	// User, when set, is the user the plugin runs as; only a root host can
	// switch users.
	User string `json:"-"`
	// Required refuses to start the plugin when the kernel cannot enforce
	// every part of the policy.
	Required bool `json:"-"`
}

// NetworkMode says what network a plugin gets.
type NetworkMode string

const (
	// NetworkNone: no network at all (a network namespace of its own).
	NetworkNone NetworkMode = "none"
	// NetworkHost: the host's network, unfiltered.
	NetworkHost NetworkMode = "host"
	// NetworkPorts: TCP connect to the listed ports only, no TCP bind.
	NetworkPorts NetworkMode = "ports"
	// NetworkEgress: a network namespace of its own whose only way out is
	// the host's forward proxy for the plugin (package egress), which
	// reaches what Network.Egress lists.
	NetworkEgress NetworkMode = "egress"
)

// Network is a plugin's network.
type Network struct {
	Mode NetworkMode `json:"mode"`
	// Ports are the TCP ports a NetworkPorts plugin may connect to.
	Ports []uint16 `json:"ports,omitempty"`
	// Egress is a NetworkEgress plugin's allow-list (egress.ParseList
	// reads it); empty allows nothing.
	Egress []string `json:"egress,omitempty"`
}

func (n Network) String() string {
	if n.Mode == NetworkPorts {
		ps := make([]string, len(n.Ports))
		for i, p := range n.Ports {
			ps[i] = strconv.Itoa(int(p))
		}
		return "tcp:" + strings.Join(ps, ",")
	}
	if n.Mode == NetworkEgress {
		if len(n.Egress) == 0 {
			return "egress: nothing"
		}
		return "egress: " + strings.Join(n.Egress, ",")
	}
	if n.Mode == "" {
		return string(NetworkNone)
	}
	return string(n.Mode)
}

// Limits are resource limits; zero means the system's.
type Limits struct {
	// Memory bounds the memory of the plugin and what it starts, bytes:
	// by its cgroup where the host can make one (every page charged to
	// it, shared ones included), else by RLIMIT_DATA (its private data
	// and address space reserved for it, thread stacks included).
	Memory uint64 `json:"memory,omitempty"`
	// OpenFiles bounds its open file descriptors.
	OpenFiles uint64 `json:"open_files,omitempty"`
	// Processes bounds the processes and threads of the plugin and what it
	// starts (its cgroup's pids.max), and of its user (RLIMIT_NPROC).
	Processes uint64 `json:"processes,omitempty"`
	// CPU bounds its CPU time; past it the kernel ends the process.
	CPU time.Duration `json:"cpu,omitempty"`
}

// Part names one mechanism of a policy, as status and validate show it.
type Part string

const (
	PartFilesystem Part = "filesystem"
	PartNetwork    Part = "network"
	PartIPC        Part = "ipc"
	PartLimits     Part = "limits"
	PartProcesses  Part = "processes"
	// PartMemory is a memory limit that holds for every page: without a
	// cgroup, RLIMIT_DATA bounds private data only.
	PartMemory Part = "memory"
	PartUser   Part = "user"
	// PartAdmin is the hiding of the hosts' admin sockets (a mount
	// namespace): without it a plugin can reach them by path, and only
	// the admin API's refusal of plugins (package lineage) stops it.
	PartAdmin Part = "admin_socket"
)

// Gap is a part of a policy the kernel (or the host's privileges) cannot
// enforce as declared, and why.
type Gap struct {
	Part Part   `json:"part"`
	Why  string `json:"why"`
}

func (g Gap) String() string { return string(g.Part) + ": " + g.Why }

// Enforcement is what of a policy a host can enforce.
type Enforcement struct {
	// State is "enforced", "partial" or "off".
	State string `json:"state"`
	// Gaps says what is not enforced when State is "partial".
	Gaps []Gap `json:"gaps,omitempty"`
	// Limits says how each declared limit is enforced, one line each
	// ("memory 256MiB: cgroup v1 memory.limit_in_bytes").
	Limits []string `json:"limits,omitempty"`
	// Egress says what enforces a NetworkEgress plugin's allow-list
	// (EgressNetNS, or the weaker EgressLandlock).
	Egress string `json:"egress,omitempty"`
}

// States of an Enforcement.
const (
	StateEnforced = "enforced"
	StatePartial  = "partial"
	StateOff      = "off"
)

// Off is the Enforcement of a plugin that has no sandbox.
var Off = Enforcement{State: StateOff}

func (e Enforcement) String() string {
	if e.State != StatePartial {
		return e.State
	}
	parts := make([]string, len(e.Gaps))
	for i, g := range e.Gaps {
		parts[i] = string(g.Part)
	}
	return "partial (" + strings.Join(parts, ", ") + " not enforced)"
}

// Enforcement says what of p the kernel described by s can enforce, for a
// host running with effective user id euid.
func (p Policy) Enforcement(s Support, euid int) Enforcement {
	var gaps []Gap
	egress := ""
	if s.LandlockABI < 1 {
		gaps = append(gaps, Gap{PartFilesystem, "Landlock is not available" + s.landlockWhy()})
	}
	switch p.Network.Mode {
	case NetworkNone, "":
		// The namespace alone leaves no way out (Landlock's TCP rules, from
		// ABI 4, only add to it).
		if !s.NetNS {
			gaps = append(gaps, Gap{PartNetwork, "no network namespace" + why(s.NetNSErr)})
		}
	case NetworkPorts:
		if s.LandlockABI < 4 {
			gaps = append(gaps, Gap{PartNetwork, fmt.Sprintf("TCP port rules need Landlock ABI 4 (the kernel has %d)", s.LandlockABI)})
		}
	case NetworkEgress:
		egress = EgressNetNS
		if !s.NetNS {
			egress = EgressLandlock
			gaps = append(gaps, Gap{PartNetwork, "no network namespace" + why(s.NetNSErr) + egressGap(s)})
		}
	}
	if !s.MountNS {
		gaps = append(gaps, Gap{PartAdmin, "no mount namespace" + why(s.MountNSErr) + ": the admin sockets are reachable by path, refused by the admin API's lineage check only"})
	}
	if s.LandlockABI < 6 {
		gaps = append(gaps, Gap{PartIPC, fmt.Sprintf("signal and abstract-socket scoping need Landlock ABI 6 (the kernel has %d)", s.LandlockABI)})
	}
	if p.Limits.Memory > 0 && !s.cgroupHas(ControllerMemory) {
		gaps = append(gaps, Gap{PartMemory, "no cgroup for the plugin (" + noCgroup + "): RLIMIT_DATA bounds its private data only, which shared mappings and memfd escape"})
	}
	if p.Limits.Processes > 0 && euid == 0 && p.User == "" && !s.cgroupHas(ControllerPids) {
		gaps = append(gaps, Gap{PartProcesses, "no cgroup for the plugin (" + noCgroup + "), and the kernel does not apply RLIMIT_NPROC to root; set user"})
	}
	if p.User != "" && euid != 0 {
		gaps = append(gaps, Gap{PartUser, "only a host running as root can switch to user " + strconv.Quote(p.User)})
	}
	limits := p.Limits.describe(s)
	if len(gaps) == 0 {
		return Enforcement{State: StateEnforced, Limits: limits, Egress: egress}
	}
	return Enforcement{State: StatePartial, Gaps: gaps, Limits: limits, Egress: egress}
}

// describe says how each limit set in l is enforced on a kernel offering s.
func (l Limits) describe(s Support) []string {
	var out []string
	by := func(what string, ways ...string) {
		out = append(out, what+": "+strings.Join(ways, ", "))
	}
	if l.Memory > 0 {
		if !s.cgroupHas(ControllerMemory) {
			by("memory "+Bytes(l.Memory), "RLIMIT_DATA (private data only)")
		} else if s.Cgroup == "v2" {
			by("memory "+Bytes(l.Memory), "cgroup v2 memory.max")
		} else {
			by("memory "+Bytes(l.Memory), "cgroup v1 memory.limit_in_bytes")
		}
	}
	if l.Processes > 0 {
		n := "processes " + strconv.FormatUint(l.Processes, 10)
		if s.cgroupHas(ControllerPids) {
			by(n, "cgroup "+s.Cgroup+" pids.max", "RLIMIT_NPROC (the user's processes)")
		} else {
			by(n, "RLIMIT_NPROC (the user's processes)")
		}
	}
	if l.OpenFiles > 0 {
		by("open_files "+strconv.FormatUint(l.OpenFiles, 10), "RLIMIT_NOFILE")
	}
	if l.CPU > 0 {
		by("cpu "+l.CPU.String(), "RLIMIT_CPU")
	}
	return out
}

// Bytes writes n as the largest binary unit that divides it ("256MiB").
func Bytes(n uint64) string {
	for _, u := range []struct {
		size uint64
		name string
	}{{1 << 40, "TiB"}, {1 << 30, "GiB"}, {1 << 20, "MiB"}, {1 << 10, "KiB"}} {
		if n >= u.size && n%u.size == 0 {
			return strconv.FormatUint(n/u.size, 10) + u.name
		}
	}
	return strconv.FormatUint(n, 10) + "B"
}

// noCgroup is why a gap needs no cgroup error of its own: the support
// line of `host validate` gives it, once.
const noCgroup = "the host cannot make cgroups; host validate says why"

func why(err string) string {
	if err == "" {
		return ""
	}
	return " (" + err + ")"
}
