package admin

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
)

// PidFile is where the host serving socket records its pid, beside the
// socket in the folder Listen made sure only its user can write to: the
// client compares it with the pid of the process it reached (SO_PEERCRED),
// so a process of the same user that put its own socket in place of the
// host's is refused, not merely one of another user.
func PidFile(socket string) string { return socket + ".pid" }

func readPidFile(path string) (int, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0, fmt.Errorf("no host recorded its pid in %s", path)
	}
	if err != nil {
		return 0, err
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		return 0, fmt.Errorf("%s does not hold a pid", path)
	}
	return pid, nil
}

// ImpostorError says the admin socket is served by a process that is not
// the host: nothing was sent to it.
type ImpostorError struct {
	Socket string
	PID    int // the process serving it
	Why    string
}

func (e *ImpostorError) Error() string {
	return fmt.Sprintf("admin socket %s is served by process %d, which is not the host (%s): nothing was sent to it; "+
		"a plugin or another program may have replaced the socket; stop it, remove the socket and start the host again", e.Socket, e.PID, e.Why)
}

// pidListener removes the pid file when the socket closes, if it still
// names this process.
type pidListener struct {
	net.Listener
	path string
	once sync.Once
}

func (l *pidListener) Close() error {
	err := l.Listener.Close()
	l.once.Do(func() {
		if pid, perr := readPidFile(l.path); perr == nil && pid == os.Getpid() {
			_ = os.Remove(l.path)
		}
	})
	return err
}

// writePidFile records this process as the one serving the socket; it
// replaces the file in one step, so a client never reads half of it.
func writePidFile(path string) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(strconv.Itoa(os.Getpid())+"\n"), 0o644); err != nil {
		return fmt.Errorf("admin socket pid file: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("admin socket pid file: %w", err)
	}
	return nil
}
