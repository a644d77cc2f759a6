//go:build unix

package sdk

import (
	"strings"
	"testing"
)

// TestForwardStdout: what Go code prints to os.Stdout while go-plugin
// starts goes to stderr; only the handshake line reaches the real stdout.
func TestForwardStdout(t *testing.T) {
	const line = "1|1|unix|/tmp/plugin123|grpc|CERT|true\n"
	for _, tc := range []struct {
		name, in, stdout, stderr string
	}{
		{"handshake only", line, line, ""},
		{"noise before and after", "banner\n" + line + "later\n", line, "banner\nlater\n"},
		{"noise glued to the handshake", "no newline" + line, line, "no newline\n"},
		{"a second handshake-like line is noise", line + line, line, line},
		{"no handshake", "a\nb", "", "a\nb"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr strings.Builder
			forwardStdout(strings.NewReader(tc.in), &stdout, &stderr)
			if stdout.String() != tc.stdout || stderr.String() != tc.stderr {
				t.Errorf("stdout %q, stderr %q; want %q, %q", stdout.String(), stderr.String(), tc.stdout, tc.stderr)
			}
		})
	}
}
