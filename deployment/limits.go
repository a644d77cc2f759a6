package deployment

import (
	"fmt"
	"io"
	"os"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// Limits on a deployment file, checked before the HCL parser sees it. The
// parser descends one Go call per level of nesting, and a stack overflow is
// not a panic Go can recover from: a hostile or broken file (200,000 nested
// blocks) would end the process, the running host included when it came in
// by a reload. The limits are far above any real deployment (the sample is
// a few KiB, nested five deep).
const (
	// MaxFileBytes is the largest deployment file read.
	MaxFileBytes = 1 << 20
	// MaxNesting is the deepest nesting of blocks, brackets, parentheses,
	// strings and template sequences, counting the operators chained in
	// one expression (the parser or the evaluator descends into each).
	MaxNesting = 100
)

// checkLimits reports a file over MaxFileBytes or nested deeper than
// MaxNesting, naming where. It lexes src, which does not recurse.
func checkLimits(path string, src []byte) hcl.Diagnostics {
	if len(src) > MaxFileBytes {
		return hcl.Diagnostics{{
			Severity: hcl.DiagError,
			Summary:  "Deployment file too large",
			Detail:   fmt.Sprintf("The file is larger than %d bytes (1 MiB), the limit. Nothing was parsed.", MaxFileBytes),
			Subject:  &hcl.Range{Filename: path},
		}}
	}
	tokens, _ := hclsyntax.LexConfig(src, path, hcl.InitialPos)
	// levels holds, for each open bracket, the operators chained in the
	// expression at that level so far: the parser recurses into a unary
	// operator's operand and a conditional's branches, and evaluation
	// recurses through a chain of binary operators.
	levels := []int{0}
	depth := func() int { return len(levels) - 1 + levels[len(levels)-1] }
	for _, tok := range tokens {
		switch tok.Type {
		case hclsyntax.TokenOBrace, hclsyntax.TokenOBrack, hclsyntax.TokenOParen,
			hclsyntax.TokenOQuote, hclsyntax.TokenOHeredoc,
			hclsyntax.TokenTemplateInterp, hclsyntax.TokenTemplateControl:
			levels = append(levels, 0)
		case hclsyntax.TokenCBrace, hclsyntax.TokenCBrack, hclsyntax.TokenCParen,
			hclsyntax.TokenCQuote, hclsyntax.TokenCHeredoc, hclsyntax.TokenTemplateSeqEnd:
			if len(levels) > 1 {
				levels = levels[:len(levels)-1]
			}
		case hclsyntax.TokenComma, hclsyntax.TokenNewline:
			// The next item or attribute is an expression of its own.
			levels[len(levels)-1] = 0
		default:
			if operators[tok.Type] {
				levels[len(levels)-1]++
			}
		}
		if depth() > MaxNesting {
			rng := tok.Range
			return hcl.Diagnostics{{
				Severity: hcl.DiagError,
				Summary:  "Nesting too deep",
				Detail:   fmt.Sprintf("Blocks, brackets, strings or operators chained in one expression reach more than %d levels here. Nothing was parsed.", MaxNesting),
				Subject:  &rng,
			}}
		}
	}
	return nil
}

// operators are the tokens that chain expressions: unary and binary
// operators and the conditional's question mark.
var operators = map[hclsyntax.TokenType]bool{
	hclsyntax.TokenPlus: true, hclsyntax.TokenMinus: true, hclsyntax.TokenStar: true,
	hclsyntax.TokenSlash: true, hclsyntax.TokenPercent: true, hclsyntax.TokenBang: true,
	hclsyntax.TokenEqualOp: true, hclsyntax.TokenNotEqual: true,
	hclsyntax.TokenLessThan: true, hclsyntax.TokenLessThanEq: true,
	hclsyntax.TokenGreaterThan: true, hclsyntax.TokenGreaterThanEq: true,
	hclsyntax.TokenAnd: true, hclsyntax.TokenOr: true, hclsyntax.TokenQuestion: true,
}

// readFile reads the deployment file at path, at most one byte more than
// MaxFileBytes, so that a huge file (or a device) is refused without being
// read whole.
func readFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
}

// readChecked reads the deployment file at path and checks it against the
// limits; a file it returns may be given to the HCL parser.
func readChecked(path string) ([]byte, hcl.Diagnostics) {
	src, err := readFile(path)
	if err != nil {
		return nil, hcl.Diagnostics{{
			Severity: hcl.DiagError,
			Summary:  "Cannot read deployment file",
			Detail:   err.Error() + ".",
			Subject:  &hcl.Range{Filename: path},
		}}
	}
	if diags := checkLimits(path, src); diags.HasErrors() {
		return nil, diags
	}
	return src, nil
}
