package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A server that never answers initialize holds a reload for one
// start_timeout in all, not one per try: the bridge starts it once (in
// Prepare), and Apply does not start it again once that start_timeout has
// run out. The starts are counted by the server, not timed; the reload's
// duration is logged.
func TestAttackBridgeHungInitializeBoundedInTotal(t *testing.T) {
	needBinaries(t)
	noLeaks(t)
	dir := t.TempDir()
	hang, starts := filepath.Join(dir, "hang"), filepath.Join(dir, "starts")
	config := deployment(t, dir, hostileBlock("hung", "    start_timeout = \"2s\"\n", "-hang-if", hang, "-starts", starts))
	h := startHost(t, config, 2)
	if err := os.WriteFile(hang, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	before := countLines(t, starts)
	began := time.Now()
	out, stderr, code := cli(t, "reload", "hung", "-c", config)
	took := time.Since(began)
	after := countLines(t, starts)
	t.Logf("reload of a server hanging in initialize, start_timeout 2s: %s, exit %d, the server started %d time(s)\n%s%s", took.Round(10*time.Millisecond), code, after-before, out, stderr)
	if code == 0 || !strings.Contains(out+stderr, "start_timeout (2s) bounds the whole start") {
		t.Errorf("reload hung: exit %d, want a failure saying start_timeout bounds the whole start", code)
	}
	if after-before != 1 {
		t.Errorf("the reload started the hanging server %d times, want once", after-before)
	}
	// The running version keeps serving.
	if r := h.call(t, "hung_echo", `{"message":"still here"}`); !r.OK {
		t.Errorf("hung_echo after the failed reload: %+v", r)
	}
}

func countLines(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return strings.Count(string(b), "\n")
}
