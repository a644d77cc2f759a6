package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestHostsSideBySide: while two hosts start and stop in a loop beside it,
// a third launches its sandboxed plugin again and again (`host reload
// caged`). Each launch covers every running host's admin socket in the
// plugin's mount namespace; a host that stops between the check and the
// cover takes its socket with it, and that must not fail the launch: zero
// failed launches out of launches.
func TestHostsSideBySide(t *testing.T) {
	needMountNS(t)
	const launches = 30
	dir := t.TempDir()
	config := hostileDeployment(t, dir, "", "")
	h := startHost(t, config, 2)
	defer stopRunning(t, config, h)

	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	cycles := 0
	for i := range 2 {
		other := hostileDeployment(t, filepath.Join(t.TempDir()), "", "")
		socket := filepath.Join(filepath.Dir(other), "run", "host.sock")
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				case <-ctx.Done():
					return
				default:
				}
				cmd := exec.CommandContext(ctx, bins.Path("host"), "run", "-c", other)
				if err := cmd.Start(); err != nil {
					t.Errorf("host %d: %v", i, err)
					return
				}
				// Stop it as soon as it is there to be covered.
				for ctx.Err() == nil {
					if _, err := os.Stat(socket); err == nil {
						break
					}
					time.Sleep(5 * time.Millisecond)
				}
				_ = cmd.Process.Signal(syscall.SIGTERM)
				_ = cmd.Wait()
				mu.Lock()
				cycles++
				mu.Unlock()
			}
		}()
	}
	failed := 0
	for n := 0; n < launches && ctx.Err() == nil; n++ {
		out, stderr, code := cli(t, "reload", "caged", "-c", config)
		if code != 0 || !strings.Contains(out, "caged") {
			failed++
			t.Errorf("launch %d: exit %d\n%s%s", n, code, out, stderr)
		}
	}
	close(stop)
	wg.Wait()
	mu.Lock()
	t.Logf("%d launches, %d failed, while the other two hosts started and stopped %d times", launches, failed, cycles)
	mu.Unlock()
	if ctx.Err() != nil {
		t.Fatal("the launches did not end in time")
	}
	if cover := strings.Count(h.stderr.String(), "cover "); cover > 0 {
		t.Errorf("the host logged %d cover failures:\n%s", cover, h.stderr)
	}
}
