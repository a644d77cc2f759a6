package lineage

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/plugkit-go/plugkit/sandbox"
)

// record is a host's entry in the registry.
type record struct {
	start  uint64
	socket string
}

// readRecord reads a registry entry: its start time, then its admin
// socket (absent from the entries of older hosts).
func readRecord(path string) (record, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return record{}, err
	}
	first, rest, _ := strings.Cut(string(b), "\n")
	start, err := strconv.ParseUint(strings.TrimSpace(first), 10, 64)
	if err != nil {
		return record{}, fmt.Errorf("%s: %w", path, err)
	}
	socket, _, _ := strings.Cut(rest, "\n")
	return record{start: start, socket: strings.TrimSpace(socket)}, nil
}

// registries are the registry folders whose hosts' admin sockets a plugin
// of this process must not reach: its user's and root's, or, for root,
// every user's (root's plugins that keep root can connect to any socket).
func registries() []string {
	me := os.Geteuid()
	if me != 0 {
		return []string{registryDir(me), registryDir(0)}
	}
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), "plugkit-hosts-*"))
	return dirs
}

// Sockets returns the admin sockets of the running hosts this process's
// plugins could reach (package sandbox hides them in a sandboxed plugin's
// mount namespace). A record whose process is gone, or is another process
// with its pid, is skipped, as is a registry folder that is not its user's
// alone.
func Sockets() []string {
	var out []string
	for _, dir := range registries() {
		uid, err := strconv.Atoi(strings.TrimPrefix(filepath.Base(dir), "plugkit-hosts-"))
		if err != nil || trusted(dir, uid) != nil {
			continue
		}
		entries, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, e := range entries {
			pid, err := strconv.Atoi(e.Name())
			if err != nil {
				continue
			}
			rec, err := readRecord(filepath.Join(dir, e.Name()))
			if err != nil || rec.socket == "" {
				continue
			}
			if st, err := readStat(pid); err == nil && st.start == rec.start {
				out = append(out, rec.socket)
			}
		}
	}
	return out
}

// MarkDir returns the folder a sandboxed plugin's mark is mounted on (the
// registry folder of this process's user, made if need be): no sandbox may
// write it (host validate refuses one that can), so none can remove it and
// with it the mark.
func MarkDir() (string, error) {
	dir := registryDir(os.Geteuid())
	if err := os.Mkdir(dir, 0o755); err != nil && !os.IsExist(err) {
		return "", fmt.Errorf("host registry: %w", err)
	}
	if err := trusted(dir, os.Geteuid()); err != nil {
		return "", err
	}
	return dir, nil
}

// ownMountNS is this process's mount namespace, read once.
var ownMountNS = sync.OnceValues(func() (string, error) { return os.Readlink("/proc/self/ns/mnt") })

// markField is how the mark appears in mountinfo: after the " - "
// separator, the file system type and the source.
var markField = []byte(" - tmpfs " + sandbox.MarkSource + " ")

// checkMount refuses a process in a plugin's mount namespace (see the
// package doc). A process in this one is cleared by one readlink; for
// another, its mountinfo is read (readable whoever owns the process),
// and a process whose mounts cannot be read is refused.
func checkMount(pid int) error {
	proc := "/proc/" + strconv.Itoa(pid)
	if ns, err := os.Readlink(proc + "/ns/mnt"); err == nil {
		if own, err := ownMountNS(); err == nil && own == ns {
			return nil
		}
	}
	f, err := os.Open(proc + "/mountinfo")
	if err != nil {
		return fmt.Errorf("process %d: %w", pid, err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for sc.Scan() {
		if bytes.Contains(sc.Bytes(), markField) {
			return &PluginError{PID: pid, Why: "runs in a plugin's mount namespace (a sandboxed plugin or something it started)"}
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("process %d: mountinfo: %w", pid, err)
	}
	return nil
}
