package main

import (
	"bytes"
	"testing"

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
