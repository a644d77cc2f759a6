package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/plugkit-go/plugkit/internal/testkit/testenv"
	"github.com/plugkit-go/plugkit/internal/testkit/testkit"
)

// runImage runs the image's entrypoint as a container would without a
// container runtime: its one layer unpacked into a folder, a mount
// namespace of its own with /proc and /dev mounted in it, chroot into it
// as the image's user (65532). The sample deployment comes up with every
// plugin ACTIVE; `host status` and a `search` call, run in the image the
// same way, answer; SIGTERM stops it cleanly. It needs root (unshare,
// mount, chroot): run as root in CI, skipped elsewhere.
func runImage(t *testing.T, layer v1.Layer) {
	if os.Geteuid() != 0 {
		if testenv.InCI() {
			t.Fatal("running the image needs root (unshare, mount, chroot)")
		}
		t.Skip("running the image needs root (unshare, mount, chroot)")
	}
	unshare := testenv.LookPath(t, "unshare")
	chroot := testenv.LookPath(t, "chroot")
	tarBin := testenv.LookPath(t, "tar")
	root := t.TempDir()
	rc, err := layer.Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	untar := exec.Command(tarBin, "-xp", "--numeric-owner", "-C", root)
	untar.Stdin = rc
	out, err := untar.CombinedOutput()
	rc.Close()
	if err != nil {
		t.Fatalf("unpacking the layer: %v\n%s", err, out)
	}
	for _, d := range []string{"proc", "dev"} {
		if err := os.Mkdir(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// in runs args inside the image, as its user, in a mount namespace of
	// its own (gone with its last process).
	in := func(ctx context.Context, args ...string) *exec.Cmd {
		script := fmt.Sprintf(`mount -t proc proc %[1]q/proc && mount --bind /dev %[1]q/dev && exec %[2]q --userspec=65532:65532 %[1]q "$@"`, root, chroot)
		return exec.CommandContext(ctx, unshare, append([]string{"--mount", "--propagation", "private", "--", "sh", "-c", script, "sh"}, args...)...)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	host := in(ctx, "/plugkit/bin/host", "run", "-c", "/plugkit/config.hcl")
	var log testkit.Buffer
	host.Stdout, host.Stderr = &log, &log
	if err := host.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- host.Wait() }()
	stopped := false
	defer func() {
		if !stopped {
			_ = host.Process.Kill()
			<-done
		}
	}()

	deadline := time.Now().Add(90 * time.Second)
	for !strings.Contains(log.String(), "host running") || strings.Count(log.String(), "state=ACTIVE") < 5 {
		select {
		case err := <-done:
			stopped = true
			t.Fatalf("the image's host exited: %v\n%s", err, log.String())
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("the sample deployment did not come up in the image:\n%s", log.String())
		}
	}
	status, err := in(ctx, "/plugkit/bin/host", "status", "-c", "/plugkit/config.hcl").CombinedOutput()
	if err != nil {
		t.Fatalf("host status in the image: %v\n%s", err, status)
	}
	for _, p := range []string{"index", "search", "files", "safety", "audit"} {
		if !strings.Contains(string(status), p) {
			t.Errorf("host status does not list %s:\n%s", p, status)
		}
	}
	if strings.Count(string(status), "ACTIVE") != 5 {
		t.Errorf("host status in the image:\n%s", status)
	}
	t.Logf("host status in the image:\n%s", status)
	call, err := in(ctx, "/plugkit/bin/host", "call", "-c", "/plugkit/config.hcl", "search", `{"q":"plugin"}`).CombinedOutput()
	if err != nil || !strings.Contains(string(call), `"hits"`) {
		t.Errorf("a search call in the image: %v\n%s", err, call)
	}

	if err := host.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		stopped = true
		if err != nil {
			t.Errorf("the image's host did not stop cleanly on SIGTERM: %v\n%s", err, log.String())
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("the image's host did not stop on SIGTERM:\n%s", log.String())
	}
}
