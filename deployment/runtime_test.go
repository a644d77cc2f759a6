package deployment

import (
	"math"
	"slices"
	"testing"

	"github.com/plugkit-go/plugkit/consent"
	"github.com/plugkit-go/plugkit/kernel"
	"github.com/plugkit-go/plugkit/pipeline"
	"github.com/plugkit-go/plugkit/remote"
	"github.com/plugkit-go/plugkit/shared/wire"
)

// The package links nothing of the runtime, so it writes out the runtime's
// names, defaults and bounds; these tests keep the copies equal.

func TestBuiltinServicesAreTheRuntimes(t *testing.T) {
	t.Parallel()
	want := []string{pipeline.ServiceName, kernel.ServicePoints, kernel.ServiceLogger}
	if !slices.Equal(builtinServices, want) {
		t.Errorf("builtinServices = %q, want %q", builtinServices, want)
	}
}

func TestDefaultsAreTheRuntimes(t *testing.T) {
	t.Parallel()
	if defaultMaxResultBytes != remote.DefaultMaxResultBytes {
		t.Errorf("defaultMaxResultBytes = %d, the plugin manager's is %d", defaultMaxResultBytes, remote.DefaultMaxResultBytes)
	}
	if maxRunDirBytes != remote.MaxSocketBase {
		t.Errorf("maxRunDirBytes = %d, the plugin manager's is %d", maxRunDirBytes, remote.MaxSocketBase)
	}
	if defaultMaxDescriptionBytes != pipeline.DefaultMaxDescriptionBytes {
		t.Errorf("defaultMaxDescriptionBytes = %d, the pipeline's is %d", defaultMaxDescriptionBytes, pipeline.DefaultMaxDescriptionBytes)
	}
	if defaultMaxArgumentBytes != pipeline.DefaultMaxArgumentBytes {
		t.Errorf("defaultMaxArgumentBytes = %d, the pipeline's is %d", defaultMaxArgumentBytes, pipeline.DefaultMaxArgumentBytes)
	}
	if defaultConsentWait != consent.WaitLimit {
		t.Errorf("defaultConsentWait = %s, the consent manager's is %s", defaultConsentWait, consent.WaitLimit)
	}
	if defaultMaxMessageBytes != wire.DefaultMaxMessageBytes {
		t.Errorf("defaultMaxMessageBytes = %d, the wire's is %d", defaultMaxMessageBytes, wire.DefaultMaxMessageBytes)
	}
}

func TestValidateMaxMessageBytesIsTheWires(t *testing.T) {
	t.Parallel()
	for _, n := range []int{math.MinInt, -1, 0, 1, 4 << 20, math.MaxInt32, math.MaxInt32 + 1, math.MaxInt} {
		got, want := validateMaxMessageBytes(n), wire.ValidateMaxMessageBytes(n)
		if (got == nil) != (want == nil) || (got != nil && got.Error() != want.Error()) {
			t.Errorf("validateMaxMessageBytes(%d) = %v; the wire's check says %v", n, got, want)
		}
	}
}
