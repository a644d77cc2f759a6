//go:build darwin || dragonfly || freebsd || linux || netbsd || openbsd

package main

import (
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
)

// Two writers on one log would fork its chain: the second is refused while
// the first holds it, and accepted once the first has closed it.
func TestOneWriterPerLog(t *testing.T) {
	s := logSettings(t)
	first := newHarness()
	first.mustStart(t, s)
	second := newHarness()
	err := second.start(s, hclog.NewNullLogger())
	if err == nil || !strings.Contains(err.Error(), "another process is writing it") {
		t.Errorf("second writer: %v; want a refusal", err)
	}
	first.mustStop(t)
	second.mustStart(t, s)
	second.mustStop(t)
}
