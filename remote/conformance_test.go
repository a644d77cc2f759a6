package remote_test

import (
	"testing"

	"github.com/plugkit-go/plugkit/internal/conformance"
)

// TestConformance runs every case of CONFORMANCE.md, the (remote) ones
// included, with each plugin under test in a process of its own.
func TestConformance(t *testing.T) {
	conformance.Run(t, processHarness{})
}
