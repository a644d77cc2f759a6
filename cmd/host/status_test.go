package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/plugkit-go/plugkit/admin"
)

func TestPrintExits(t *testing.T) {
	var b bytes.Buffer
	printExits(&b, []admin.PluginStatus{
		{Name: "healthy", State: "ACTIVE"},
		{Name: "crashy", State: "FAILED", LastExit: "process 42 exited unexpectedly: exit status 3",
			Stderr: []string{"[INFO] starting", "fatal: the database is gone"}},
		{Name: "killed", State: "ACTIVE", LastExit: "process 43 exited unexpectedly: killed by signal: killed"},
		{Name: "once", State: "FAILED", LastExit: "process 44 exited while starting: exit status 1", Stderr: []string{"bad flag"}},
	})
	want := "\ncrashy: last exit: process 42 exited unexpectedly: exit status 3\n" +
		"  stderr (last 2 lines):\n" +
		"    [INFO] starting\n" +
		"    fatal: the database is gone\n" +
		"\nkilled: last exit: process 43 exited unexpectedly: killed by signal: killed\n" +
		"\nonce: last exit: process 44 exited while starting: exit status 1\n" +
		"  stderr (last line):\n" +
		"    bad flag\n"
	if b.String() != want {
		t.Fatalf("got:\n%s\nwant:\n%s", b.String(), want)
	}

	b.Reset()
	printExits(&b, []admin.PluginStatus{{Name: "healthy", State: "ACTIVE"}})
	if b.Len() != 0 {
		t.Fatalf("a healthy plugin printed %q", b.String())
	}
}

// TestStatusShowsLastExit SIGKILLs a plugin of a running host: once it is
// back, `host status` says how its last process ended.
func TestStatusShowsLastExit(t *testing.T) {
	needBinaries(t)
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "root"), 0o755); err != nil {
		t.Fatal(err)
	}
	config := filepath.Join(dir, "config.hcl")
	hcl := fmt.Sprintf("host {\n  admin_socket = \"host.sock\"\n}\nplugin \"files\" {\n  path = %q\n  config {\n    root = \"root\"\n  }\n}\n", pluginPath("files"))
	if err := os.WriteFile(config, []byte(hcl), 0o644); err != nil {
		t.Fatal(err)
	}
	startHost(t, config, 1)

	out, _, code := cli(t, "status", "-c", config)
	if code != 0 || strings.Contains(out, "last exit") {
		t.Fatalf("status of a healthy deployment: exit %d\n%s", code, out)
	}

	pid := statusOf(t, config)["files"].PID
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	var st admin.PluginStatus
	deadline := time.Now().Add(20 * time.Second)
	for {
		st = statusOf(t, config)["files"]
		if st.State == "ACTIVE" && st.PID != 0 && st.PID != pid {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("files was not restarted: %+v", st)
		}
		time.Sleep(50 * time.Millisecond)
	}
	want := fmt.Sprintf("process %d exited unexpectedly: killed by signal: killed", pid)
	if st.LastExit != want {
		t.Errorf("last_exit = %q, want %q", st.LastExit, want)
	}
	out, _, code = cli(t, "status", "-c", config)
	if code != 0 || !strings.Contains(out, "\nfiles: last exit: "+want+"\n") {
		t.Errorf("status: exit %d, want the last exit:\n%s", code, out)
	}
	t.Logf("host status:\n%s", out)
}
