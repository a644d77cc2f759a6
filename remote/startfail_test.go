package remote

import (
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"testing"
)

// go-plugin's "Unrecognized remote plugin message" gives way to what
// happened: the process exited, or what it printed instead of the
// handshake.
func TestStartFailure(t *testing.T) {
	exited := exec.Command("true")
	if err := exited.Run(); err != nil {
		t.Fatal(err)
	}
	diag := (&processRunner{}).Diagnose(t.Context())
	for _, tc := range []struct {
		err  string
		cmd  *exec.Cmd
		want string
	}{
		{"Unrecognized remote plugin message: \nFailed to read any lines from plugin's stdout\n" + diag, exited, "the process exited before its handshake"},
		{"Unrecognized remote plugin message: hello there\n" + diag, exited, `its first line on stdout was "hello there", not the go-plugin handshake`},
		{"plugin exited before we could connect", exited, "plugin exited before we could connect"},
	} {
		got := startFailure(errors.New(tc.err), tc.cmd).Error()
		if !strings.HasPrefix(got, tc.want) || strings.Contains(got, "Unrecognized") {
			t.Errorf("startFailure(%q) = %q, want %q", tc.err, got, tc.want)
		}
	}
}

// A Go panic's stack pushes its "panic:" line out of the tail; the line
// that says why the process died is still the panic's, not the last
// stack frame.
func TestTellingIsThePanic(t *testing.T) {
	var tail stderrTail
	fmt.Fprint(&tail, "starting\npanic: assignment to entry in nil map\n\ngoroutine 1 [running]:\n")
	for i := range 3 * tailLines {
		fmt.Fprintf(&tail, "main.f%d()\n\t/src/main.go:%d +0x28\n", i, i)
	}
	if got := tail.Telling(); got != "panic: assignment to entry in nil map" {
		t.Errorf("Telling = %q, want the panic line", got)
	}
	var plain stderrTail
	fmt.Fprint(&plain, "one\nlast words\n")
	if got := plain.Telling(); got != "last words" {
		t.Errorf("Telling without a panic = %q, want the last line", got)
	}
}
