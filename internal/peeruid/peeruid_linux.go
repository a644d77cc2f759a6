package peeruid

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
)

// readers bounds how many lookups read /proc at once. Each holds a
// descriptor or two while it reads; a flood of new connections, each
// looked up, would otherwise take descriptors beyond the host's connection
// cap, which is what bounds them.
var readers = make(chan struct{}, 4)

func readProc() func() {
	readers <- struct{}{}
	return func() { <-readers }
}

// diagUnavailable is set once NETLINK_SOCK_DIAG has failed to open: the
// tables are read from then on.
var diagUnavailable atomic.Bool

// lookup asks the kernel for the client's socket over NETLINK_SOCK_DIAG,
// or finds it in the socket tables (shared_linux.go) where that is not
// available.
func lookup(server, client netip.AddrPort) (Socket, error) {
	if !diagUnavailable.Load() {
		s, err := diagLookup(client, server)
		if !errors.Is(err, errDiagUnavailable) {
			return s, err
		}
		diagUnavailable.Store(true)
	}
	return shared.find(server, client)
}

// processes scans /proc for the processes of s.UID holding the socket. A
// process whose descriptors cannot be read (another user's, or one made
// non-dumpable, whose /proc entry root owns) is not found: the caller
// refuses a socket held by nobody it can see.
func processes(s Socket) ([]int, error) {
	if s.Inode == 0 {
		return nil, ErrNoProcess // a socket no process holds any more
	}
	want := "socket:[" + strconv.FormatUint(s.Inode, 10) + "]"
	defer readProc()()
	proc, err := os.Open("/proc")
	if err != nil {
		return nil, err
	}
	names, err := proc.Readdirnames(-1)
	proc.Close()
	if err != nil {
		return nil, fmt.Errorf("reading /proc: %w", err)
	}
	var pids []int
	for _, name := range names {
		pid, err := strconv.Atoi(name)
		if err != nil || pid <= 0 {
			continue
		}
		dir := "/proc/" + name
		var st syscall.Stat_t
		if syscall.Stat(dir, &st) != nil || int(st.Uid) != s.UID {
			continue
		}
		if holds(dir+"/fd", want) {
			pids = append(pids, pid)
		}
	}
	if len(pids) == 0 {
		return nil, ErrNoProcess
	}
	return pids, nil
}

// holds reports whether a descriptor of the folder fds links to want.
func holds(fds, want string) bool {
	f, err := os.Open(fds)
	if err != nil {
		return false
	}
	defer f.Close()
	for {
		names, err := f.Readdirnames(256)
		for _, n := range names {
			if target, _ := os.Readlink(fds + "/" + n); target == want {
				return true
			}
		}
		if err != nil {
			return false // io.EOF: read to the end
		}
	}
}

// heldAmong returns those of pids, and of their descendants, that run as
// s.UID and hold s. It reads the descriptors of those processes only.
func heldAmong(s Socket, pids []int) []int {
	if s.Inode == 0 || len(pids) == 0 {
		return nil
	}
	want := "socket:[" + strconv.FormatUint(s.Inode, 10) + "]"
	defer readProc()()
	var held []int
	seen := make(map[int]bool, len(pids))
	queue := append([]int(nil), pids...)
	// The walk is bounded: a process tree of the user's is not the host's
	// to read without end.
	for len(queue) > 0 && len(seen) < maxWalk {
		pid := queue[0]
		queue = queue[1:]
		if pid <= 0 || seen[pid] {
			continue
		}
		seen[pid] = true
		dir := "/proc/" + strconv.Itoa(pid)
		var st syscall.Stat_t
		if syscall.Stat(dir, &st) != nil {
			continue // gone
		}
		if int(st.Uid) == s.UID && holds(dir+"/fd", want) {
			held = append(held, pid)
		}
		queue = append(queue, children(dir)...)
	}
	return held
}

// maxWalk bounds the processes heldAmong reads.
const maxWalk = 1024

// children lists the children of every thread of the process at dir
// (/proc/PID/task/TID/children), which are the ones that inherited its
// descriptors and have not left it by a double fork.
func children(dir string) []int {
	tasks, err := os.ReadDir(dir + "/task")
	if err != nil {
		return nil
	}
	var out []int
	for _, t := range tasks {
		b, err := os.ReadFile(dir + "/task/" + t.Name() + "/children")
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(b)) {
			if pid, err := strconv.Atoi(f); err == nil {
				out = append(out, pid)
			}
		}
	}
	return out
}
