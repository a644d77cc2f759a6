package pipeline_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/plugkit-go/plugkit/internal/testkit/conformance"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// TestConformance runs every case of CONFORMANCE.md with in-host plugins.
func TestConformance(t *testing.T) {
	conformance.Run(t, conformance.InHost())
}
