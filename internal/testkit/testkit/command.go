package testkit

import (
	"bytes"
	"context"
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// Command runs bin with args in dir (the test's folder when empty), bounded
// by bound, and returns its stdout, its stderr and its exit code; it fails
// t when bin cannot be run or is ended by the bound. Tests run the host's
// CLI with it as a user would.
func Command(t testing.TB, bound time.Duration, dir, bin string, args ...string) (string, string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = dir
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return out.String(), errb.String(), 0
	case ctx.Err() != nil:
		t.Fatalf("%s %s: not done within %v\n%s%s", bin, strings.Join(args, " "), bound, out.String(), errb.String())
	case errors.As(err, &ee):
		return out.String(), errb.String(), ee.ExitCode()
	default:
		t.Fatalf("%s %s: %v", bin, strings.Join(args, " "), err)
	}
	return "", "", 0
}
