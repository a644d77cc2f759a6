package deployment

import (
	"fmt"
	"math"

	"github.com/hashicorp/hcl/v2"

	"github.com/plugkit-go/plugkit/internal/hclbound"
)

// Limits on a deployment file, checked before the HCL parser sees it (see
// package hclbound for why): at start, `host validate`, `host reload`,
// SIGHUP and `host lock` alike.
const (
	// MaxFileBytes is the largest deployment file read.
	MaxFileBytes = hclbound.DefaultMaxBytes
	// MaxNesting is the deepest nesting of blocks, brackets, parentheses,
	// strings and template sequences, counting the operators and traversal
	// steps chained in one expression.
	MaxNesting = hclbound.DefaultMaxNesting
)

var fileLimits = hclbound.Limits{What: "deployment file", MaxBytes: MaxFileBytes, MaxNesting: MaxNesting}

// readChecked reads the deployment file at path and checks it against the
// limits; a file it returns may be given to the HCL parser.
func readChecked(path string) ([]byte, hcl.Diagnostics) {
	return fileLimits.ReadFile(path)
}

// validateMaxMessageBytes reports whether n can be a gRPC message limit, as
// the wire's check does (a test keeps the two alike).
func validateMaxMessageBytes(n int) error {
	if n <= 0 || n > math.MaxInt32 {
		return fmt.Errorf("max message size %d is outside 1..%d bytes", n, math.MaxInt32)
	}
	return nil
}
