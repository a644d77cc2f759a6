package admin_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/hashicorp/go-hclog"

	"github.com/plugkit-go/plugkit/admin"
	"github.com/plugkit-go/plugkit/internal/httplimit"
	"github.com/plugkit-go/plugkit/internal/testkit/testkit"
)

// fakeEnv makes the test binary, run again, serve a fake admin socket.
const fakeEnv = "PLUGKIT_TEST_FAKE_ADMIN_SOCKET"

func TestMain(m *testing.M) {
	if path := os.Getenv(fakeEnv); path != "" {
		fakeHost(path)
		return
	}
	os.Exit(m.Run())
}

// fakeHost is another user's process in place of the host: it serves the
// socket at path and reports, one line per connection, how many bytes the
// client sent it before hanging up.
func fakeHost(path string) {
	ln, err := net.Listen("unix", path)
	if err != nil {
		fmt.Println("listen:", err)
		os.Exit(1)
	}
	_ = os.Chmod(path, 0o777)
	fmt.Println("listening")
	for {
		c, err := ln.Accept()
		if err != nil {
			os.Exit(0)
		}
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		n, _ := io.Copy(io.Discard, c)
		c.Close()
		fmt.Printf("received %d bytes\n", n)
	}
}

// TestAttackSocketFolder covers a socket folder someone else could write
// to: the host refuses it with an error naming the folder and the fix.
func TestAttackSocketFolder(t *testing.T) {
	cases := []struct {
		name  string
		mode  os.FileMode
		owner int // -1: this user
		want  []string
	}{
		{"private", 0o700, -1, nil},
		{"readable by others", 0o755, -1, nil},
		{"writable by everyone", 0o777, -1, []string{"can be written by its group or by others (mode 0777)", "chmod go-w"}},
		{"writable by its group", 0o770, -1, []string{"(mode 0770)", "chmod go-w"}},
		{"sticky and writable by everyone", 0o1777, -1, []string{"(mode 0777)"}},
		{"owned by another user", 0o700, 65534, []string{"belongs to uid 65534, not to you", "a folder of your own"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "run")
			if err := os.Mkdir(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(dir, c.mode); err != nil {
				t.Fatal(err)
			}
			if c.owner >= 0 {
				if os.Geteuid() != 0 {
					t.Skip("giving a folder to another user needs root")
				}
				if err := os.Chown(dir, c.owner, c.owner); err != nil {
					t.Fatal(err)
				}
			}
			ln, err := admin.Listen(filepath.Join(dir, "host.sock"))
			if c.want == nil {
				if err != nil {
					t.Fatalf("listen: %v", err)
				}
				ln.Close()
				return
			}
			if err == nil {
				ln.Close()
				t.Fatalf("a socket in a folder %s was accepted", c.name)
			}
			t.Logf("refused: %v", err)
			for _, w := range append(c.want, dir) {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			if _, err := os.Stat(filepath.Join(dir, "host.sock")); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("a refused folder got a socket: %v", err)
			}
		})
	}
}

// TestAttackSocketHijack puts another user's process on the admin socket,
// as a user who can write to the socket's folder could: the client checks
// who serves the socket before sending anything, refuses, and the impostor
// receives not one byte of the call.
func TestAttackSocketHijack(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("running a process as another user needs root")
	}
	t.Cleanup(func() { goleak.VerifyNone(t) })
	ctx := testkit.Context(t)
	// The other user must be able to run the test binary and write the
	// socket's folder (the very mistake the attack needs).
	dir := t.TempDir()
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "impostor")
	copyFile(t, self, bin)
	run := filepath.Join(dir, "run")
	if err := os.Mkdir(run, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(run, 0o777); err != nil {
		t.Fatal(err)
	}
	socket := filepath.Join(run, "host.sock")

	cmd := exec.Command(bin)
	cmd.Env = []string{fakeEnv + "=" + socket}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	lines := bufio.NewScanner(out)
	if !lines.Scan() || lines.Text() != "listening" {
		t.Fatalf("the impostor did not start: %q", lines.Text())
	}

	c := admin.NewClient(socket)
	_, err = c.Call(ctx, "read_file", json.RawMessage(`{"path":"secret-plans.md"}`), nil)
	var pe *admin.PeerError
	if !errors.As(err, &pe) {
		t.Fatalf("call to an impostor = %v, want a PeerError", err)
	}
	t.Logf("refused: %v", err)
	if pe.UID != 65534 || pe.Me != 0 || !strings.Contains(err.Error(), socket) || !strings.Contains(err.Error(), "nothing was sent") {
		t.Errorf("error %q should name the socket, its user and this one", err)
	}
	if _, err := c.Status(ctx); !errors.As(err, &pe) {
		t.Errorf("status from an impostor = %v, want a PeerError", err)
	}
	// The impostor saw the two connections, empty.
	for range 2 {
		if !lines.Scan() {
			t.Fatalf("the impostor stopped: %v", lines.Err())
		}
		if got := lines.Text(); got != "received 0 bytes" {
			t.Errorf("the impostor %s", got)
		}
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	src, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
}

// serveAdmin serves an admin API without a host: its reload answers, the
// other requests must be refused before their handler runs.
func serveAdmin(t *testing.T, lim httplimit.Limits) string {
	t.Helper()
	socket := filepath.Join(t.TempDir(), "run", "host.sock")
	ln, err := admin.Listen(socket)
	if err != nil {
		t.Fatal(err)
	}
	srv := admin.NewServer(admin.Controls{
		Limits: lim,
		Reload: func(_ context.Context, plugin string) (string, error) { return "reloaded " + plugin, nil },
	}, hclog.NewNullLogger())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	return socket
}

// TestAttackOversizedCall sends a call larger than the host's message
// limit: it is refused before it is read, with an error that says so.
func TestAttackOversizedCall(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	ctx := testkit.Context(t)
	socket := serveAdmin(t, httplimit.Limits{MaxBodyBytes: 64 << 10})
	big := json.RawMessage(`{"content":"` + strings.Repeat("x", 1<<20) + `"}`)
	_, err := admin.NewClient(socket).Call(ctx, "write_file", big, nil)
	if err == nil {
		t.Fatal("an oversized call was accepted")
	}
	t.Logf("refused: %v", err)
	for _, want := range []string{"call: refused", "is larger than the limit of 65536 bytes", "max_message_bytes is 65536"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}

// TestAttackStalledAdminRequests holds every admin connection the cap
// allows with a body that never comes: each is answered 408 and closed when
// the body timeout passes, so a command that comes later is served.
func TestAttackStalledAdminRequests(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	const maxConns = 4
	socket := serveAdmin(t, httplimit.Limits{MaxConns: maxConns, BodyTimeout: 200 * time.Millisecond})
	answers := make(chan string, 2*maxConns)
	for range 2 * maxConns {
		go func() {
			c, err := net.DialTimeout("unix", socket, 5*time.Second)
			if err != nil {
				answers <- err.Error()
				return
			}
			defer c.Close()
			fmt.Fprint(c, "POST /v1/call HTTP/1.1\r\nHost: host\r\nContent-Length: 100\r\n\r\n{\"tool\":")
			_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
			b, _ := io.ReadAll(c)
			answers <- string(b)
		}()
	}
	for range 2 * maxConns {
		a := <-answers
		if !strings.HasPrefix(a, "HTTP/1.1 408") || !strings.Contains(a, `call: refused: the request body was not received within 200ms`) {
			t.Errorf("a stalled call got %q, want 408 with a JSON error", a)
		}
	}
	// The connections are free again.
	msg, err := admin.NewClient(socket).Reload(testkit.Context(t), "files")
	if err != nil || msg != "reloaded files" {
		t.Errorf("reload after the attack = %q, %v", msg, err)
	}
}
