package sdk

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"golang.org/x/sys/unix"

	"github.com/plugkit-go/plugkit/shared/wire"
)

// runTestHost is the "host" role: it starts a quiet plugin, prints the
// plugin's pid and waits to be killed.
func runTestHost() {
	// go-plugin appends this process's environment after the command's own:
	// without this the plugin would see role=host last and start a host too.
	_ = os.Unsetenv(roleEnv)
	client := plugin.NewClient(&plugin.ClientConfig{
		HandshakeConfig:  wire.Handshake,
		Plugins:          wire.ClientPlugins(wire.DefaultMaxMessageBytes),
		Cmd:              pluginCommand("quiet-plugin"),
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		Logger:           hclog.NewNullLogger(),
	})
	if _, err := client.Client(); err != nil {
		fmt.Fprintln(os.Stderr, "host role:", err)
		os.Exit(1)
	}
	fmt.Println(client.ReattachConfig().Pid)
	select {} // until SIGKILL
}

// TestOrphanExits kills a host with SIGKILL and checks that its plugin exits
// by itself within one second. The test process becomes a child subreaper so
// the orphan is re-parented to it and can be reaped (and timed) here.
func TestOrphanExits(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		t.Skipf("cannot become a subreaper: %v", err)
	}
	host := pluginCommand("host")
	out, err := host.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := host.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		_ = host.Process.Kill()
		_ = host.Wait()
		t.Fatalf("host role printed no pid: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatalf("host role printed %q", line)
	}

	killed := time.Now()
	if err := host.Process.Signal(unix.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = host.Wait()
	for {
		var ws unix.WaitStatus
		got, err := unix.Wait4(pid, &ws, unix.WNOHANG, nil)
		if err != nil {
			t.Fatalf("wait4(%d): %v", pid, err)
		}
		if got == pid {
			t.Logf("plugin exited %v after its host was killed (%v)", time.Since(killed).Round(time.Millisecond), ws)
			break
		}
		if time.Since(killed) > time.Second {
			_ = unix.Kill(pid, unix.SIGKILL)
			_, _ = unix.Wait4(pid, &ws, 0, nil)
			t.Fatal("plugin still alive one second after its host was SIGKILLed")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
