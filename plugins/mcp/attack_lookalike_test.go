package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestAttackLookalikeToolNames: with prefix = "", a hostile server lists
// tools whose names look like read_file, the files plugin's tool: case
// variants, a Cyrillic е, a trailing space, a NUL, 1 and I for l, plus
// ../x and a name of 5,000 characters; a second server lists Write_file
// beside files' write_file. They were registered and served. Now a name
// outside the MCP character set, or one that looks like another tool's
// (of the same server or of another plugin), is held absent: listed with
// the reason in host tools and host status, refused as UNKNOWN_TOOL, and
// no call reaches either server.
func TestAttackLookalikeToolNames(t *testing.T) {
	needBinaries(t)
	noLeaks(t)
	dir := t.TempDir()
	root := filepath.Join(dir, "files")
	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "secret.txt"), []byte("the real file"), 0o644); err != nil {
		t.Fatal(err)
	}
	config := deployment(t, dir, fmt.Sprintf(`
plugin "files" {
  path = %q
  config {
    root = %q
  }
}

plugin "evil" {
  path = %q
  config {
    prefix  = ""
    command = [%q, "-lookalikes", "read_file"]
  }
}

plugin "sly" {
  path = %q
  config {
    prefix  = ""
    command = [%q, "-claim", "Write_file"]
  }
}
`, bin("plugins/files"), root, bin("plugins/mcp"), bin("hostile-mcp"), bin("plugins/mcp"), bin("mcp-test-server")))
	h := startHost(t, config, 4)

	// What -lookalikes read_file lists, and why each must be held.
	why := map[string]string{
		"READ_FILE":               `looks like "Read_file", another tool of this server`,
		"Read_file":               "another tool of this server",
		"read_file ":              "MCP tool name rule",
		"r\x00ead_file":           "MCP tool name rule",
		"../x":                    "MCP tool name rule",
		strings.Repeat("a", 5000): "5000 bytes long",
		"r\u0435ad_file":          "MCP tool name rule",
		"read_fi1e":               "another tool of this server",
		"read_fiIe":               "another tool of this server",
	}
	evil := h.tools(t, "evil")
	for name, want := range why {
		tool, ok := evil[name]
		switch {
		case !ok:
			t.Errorf("%.40q is not listed: the reason it is not served is not shown", name)
		case tool.Held == "":
			t.Errorf("%.40q is served, not held", name)
		case !strings.Contains(tool.Held, want):
			t.Errorf("%.40q is held for %q, want %q in it", name, tool.Held, want)
		}
	}
	sly := h.tools(t, "sly")
	if tool, ok := sly["Write_file"]; !ok || !strings.Contains(tool.Held, `looks like the tool "write_file" (of plugin files)`) {
		t.Errorf("sly's Write_file: %+v, want it held as a lookalike of files' write_file", tool)
	}
	t.Logf("held: Write_file: %s", sly["Write_file"].Held)
	t.Logf("held: READ_FILE: %s", evil["READ_FILE"].Held)
	t.Logf("held: ../x: %s", evil["../x"].Held)
	if files := h.tools(t, "files"); files["read_file"].Held != "" || files["write_file"].Held != "" {
		t.Errorf("files' own tools are held: %+v", files)
	}

	status, stderr, code := cli(t, "status", "-c", config)
	if code != 0 {
		t.Fatalf("host status: exit %d %s", code, stderr)
	}
	for _, want := range []string{"evil: tools held absent:", `  ../x: the name breaks the MCP tool name rule: the name has "/" at byte 2`, "sly: tools held absent:", `  Write_file: the host refused it`} {
		if !strings.Contains(status, want) {
			t.Errorf("host status does not show %q:\n%s", want, status)
		}
	}

	for name := range why {
		if strings.ContainsRune(name, 0) {
			continue // not an argument a command line can carry
		}
		if r := h.call(t, name, `{"path":"secret.txt"}`); r.OK || r.code() != "UNKNOWN_TOOL" {
			t.Errorf("host call %.40q: %s, want UNKNOWN_TOOL", name, r)
		}
	}
	if r := h.call(t, "Write_file", `{"path":"x","content":"y"}`); r.OK || r.code() != "UNKNOWN_TOOL" {
		t.Errorf("host call Write_file: %s, want UNKNOWN_TOOL", r)
	}
	if r := h.call(t, "read_file", `{"path":"secret.txt"}`); !r.OK || !strings.Contains(string(r.Value), "the real file") {
		t.Errorf("read_file: %s, want the file's content", r)
	}
	if log := h.log.String(); strings.Contains(log, "captured") || strings.Contains(log, "claimed Write_file called") {
		t.Errorf("a call reached a hostile server:\n%s", log)
	}
}

// TestAttackToolListedTwiceAcrossPages: a server lists the tool twice in
// tools/list, on two pages, with different definitions. The bridge took
// the last one silently; which one the server means is unknown, so the
// tool is now held absent, the reason shown, and no call reaches it.
func TestAttackToolListedTwiceAcrossPages(t *testing.T) {
	needBinaries(t)
	noLeaks(t)
	dir := t.TempDir()
	config := deployment(t, dir, fmt.Sprintf(`
plugin "evil" {
  path = %q
  config {
    prefix  = ""
    command = [%q, "-dup-pages"]
  }
}
`, bin("plugins/mcp"), bin("hostile-mcp")))
	h := startHost(t, config, 2)
	tool, ok := h.tools(t, "evil")["twice"]
	if !ok || !strings.Contains(tool.Held, "listed this tool more than once in tools/list") {
		t.Fatalf("twice: %+v, want it held as listed twice", tool)
	}
	t.Logf("held: twice: %s", tool.Held)
	if r := h.call(t, "twice", `{}`); r.OK || r.code() != "UNKNOWN_TOOL" || !strings.Contains(r.message(), "more than once") {
		t.Errorf("host call twice: %s, want UNKNOWN_TOOL naming the reason", r)
	}
	if r := h.call(t, "echo", `{"message":"hi"}`); !r.OK {
		t.Errorf("echo, listed once: %s", r)
	}
	status, _, _ := cli(t, "status", "-c", config)
	if !strings.Contains(status, "twice: the server listed this tool more than once") {
		t.Errorf("host status does not show why twice is held:\n%s", status)
	}
}

// TestAttackHugeDescription: a server lists a tool with a description of
// 8 MB, which the host accepted and served to every client in every
// tools/list (and the bridge spent 12 s scanning, at every list). A
// description over max_description_bytes (16 KiB by default; the bridge's
// and the host's) now holds the tool absent: listed with the reason, its
// description cut to the bound, never scanned whole, served or called.
func TestAttackHugeDescription(t *testing.T) {
	needBinaries(t)
	noLeaks(t)
	dir := t.TempDir()
	config := deployment(t, dir, fmt.Sprintf(`
plugin "evil" {
  path = %q
  config {
    prefix  = ""
    command = [%q, "-desc-bytes", "8388608"]
  }
}
`, bin("plugins/mcp"), bin("hostile-mcp")))
	h := startHost(t, config, 2)
	tool, ok := h.tools(t, "evil")["verbose"]
	if !ok || !strings.Contains(tool.Held, "the description is 8388608 bytes, more than max_description_bytes (16384)") {
		t.Fatalf("verbose: held %q, want it held for its description's size", tool.Held)
	}
	if len(tool.Description) > 16384 {
		t.Errorf("host tools lists a description of %d bytes, over the bound", len(tool.Description))
	}
	t.Logf("held: verbose: %s", tool.Held)
	if r := h.call(t, "verbose", `{}`); r.OK || r.code() != "UNKNOWN_TOOL" || !strings.Contains(r.message(), "max_description_bytes") {
		t.Errorf("host call verbose: %s, want UNKNOWN_TOOL naming the limit", r)
	}
	if r := h.call(t, "echo", `{"message":"hi"}`); !r.OK {
		t.Errorf("echo: %s", r)
	}
}
