package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A resource and a resource template are pinned by host lock like tools and
// prompts; when their descriptions change (the server redefines them, seen
// at the next start) they are left out of the list and a read of them is
// refused with the reason, and host lock accepts them again.
func TestPinnedResourceRugPull(t *testing.T) {
	needBinaries(t)
	noLeaks(t)
	dir := t.TempDir()
	pulled := filepath.Join(dir, "pulled")
	config := deployment(t, dir, hostileBlock("pr", "", "-resources", "-resource-desc", pulled))
	h := startHost(t, config, 2)
	const list, read = "pr_resources.list", "pr_resources.read"
	waitFor(t, 30*time.Second, list+" registered", func() bool {
		e, ok := h.entries(t, "pr")[list]
		return ok && e.Kind == "resources"
	}, h.log.String)
	for _, uri := range []string{"hostile://notes", "hostile://item/7"} {
		if r := h.call(t, read, `{"uri":"`+uri+`"}`); !r.OK {
			t.Fatalf("read %s before the lock: %+v", uri, r)
		}
	}
	out, stderr, code := cli(t, "lock", "-c", config)
	if code != 0 || !strings.Contains(out, "+ resource:hostile://notes") || !strings.Contains(out, "+ template:hostile://item/{id}") ||
		!strings.Contains(out, "+ resource:hostile://creds") {
		t.Fatalf("lock: exit %d\n%s%s", code, out, stderr)
	}
	h.waitActive(t, 2)
	if r := h.call(t, read, `{"uri":"hostile://notes"}`); !r.OK {
		t.Fatalf("read hostile://notes once locked: %+v", r)
	}

	// The server's descriptions change; the bridge sees it when it starts
	// again.
	if err := os.WriteFile(pulled, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, stderr, code := cli(t, "reload", "pr", "-c", config); code != 0 {
		t.Fatalf("reload: exit %d\n%s%s", code, out, stderr)
	}
	const why = "definition changed since locked: description"
	waitFor(t, 30*time.Second, "the changed resources held", func() bool {
		notes := strings.Join(h.entries(t, "pr")[list].Notes, "\n")
		return strings.Contains(notes, "resource:hostile://notes held absent: "+why) &&
			strings.Contains(notes, "template:hostile://item/{id} held absent: "+why)
	}, h.log.String)
	if e := h.entries(t, "pr")[list]; !hasNote(e, "resource:hostile://notes: ") || !hasNote(e, "instruction-tags") {
		t.Errorf("the changed resource's description is not flagged: %+v", e.Notes)
	}
	r := h.call(t, list, `{}`)
	if !r.OK {
		t.Fatalf("%s: %+v", list, r)
	}
	if v := string(r.Value); strings.Contains(v, "hostile://notes") || strings.Contains(v, "hostile://item/") || !strings.Contains(v, "hostile://creds") {
		t.Errorf("%s lists the held resources or not the others: %s", list, v)
	}
	for _, uri := range []string{"hostile://notes", "hostile://item/7"} {
		r := h.call(t, read, `{"uri":"`+uri+`"}`)
		if r.OK || !strings.Contains(r.message(), "held absent") || !strings.Contains(r.message(), why) {
			t.Errorf("read %s after its description changed: %+v, want refused naming %q", uri, r, why)
		}
	}
	if r := h.call(t, read, `{"uri":"hostile://creds"}`); !r.OK {
		t.Errorf("read hostile://creds, which did not change: %+v", r)
	}

	out, stderr, code = cli(t, "lock", "pr", "-c", config)
	if code != 0 || !strings.Contains(out, "~ resource:hostile://notes: description changed") {
		t.Fatalf("lock pr: exit %d\n%s%s", code, out, stderr)
	}
	h.waitActive(t, 2)
	waitFor(t, 30*time.Second, "hostile://notes read again", func() bool {
		return h.call(t, read, `{"uri":"hostile://notes"}`).OK
	}, h.log.String)
}
