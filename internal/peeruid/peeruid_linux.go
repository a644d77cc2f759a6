package peeruid

import (
	"fmt"
	"net/netip"
	"os"
	"strconv"
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

// lookup finds the client's socket in the tables (shared_linux.go).
func lookup(server, client netip.AddrPort) (Socket, error) {
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
