package remote

import (
	"errors"
	"strings"
	"testing"
)

func TestProtocolMismatch(t *testing.T) {
	for msg, want := range map[string]string{
		"incompatible API version with plugin. Plugin version: 3, Client versions: [1 2]": "the plugin speaks plugkit protocol 3, newer than this host's (it speaks 1, 2): upgrade the host, or build the plugin with an SDK of protocol 2",
		"incompatible API version with plugin. Plugin version: 0, Client versions: [1 2]": "the plugin speaks plugkit protocol 0, which this host no longer speaks (it speaks 1, 2)",
	} {
		if got := startFailure(errors.New(msg), nil); !strings.HasPrefix(got.Error(), want) {
			t.Errorf("startFailure(%q) = %q, want %q…", msg, got, want)
		}
	}
	if protocolMismatch("Unrecognized remote plugin message: x") != nil {
		t.Error("another start failure read as a version mismatch")
	}
}
