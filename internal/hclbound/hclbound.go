// Package hclbound reads an HCL file the host parses (the deployment file,
// an mcp_auth keys file) within a size and a nesting limit, before the HCL
// parser sees it. The parser descends one Go call per level of nesting,
// and a stack overflow is not a panic Go can recover from: a hostile or
// broken file (200,000 nested blocks, or `[*]` chained 200,000 times)
// would end the process, the running host included when it came in by a
// reload. The limits are far above any real file (the sample deployment is
// a few KiB, nested five deep).
package hclbound

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// Defaults of Limits.
const (
	// DefaultMaxBytes is the largest file read: 1 MiB.
	DefaultMaxBytes = 1 << 20
	// DefaultMaxNesting is the deepest nesting of blocks, brackets,
	// parentheses, strings and template sequences, counting the
	// operators and traversal steps chained in one expression (the parser
	// or the evaluator descends into each).
	DefaultMaxNesting = 100
)

// Limits bound one kind of file; What names it in diagnostics ("deployment
// file", "keys file"). A zero limit takes its default.
type Limits struct {
	What       string
	MaxBytes   int
	MaxNesting int
}

func (l Limits) withDefaults() Limits {
	if l.MaxBytes <= 0 {
		l.MaxBytes = DefaultMaxBytes
	}
	if l.MaxNesting <= 0 {
		l.MaxNesting = DefaultMaxNesting
	}
	if l.What == "" {
		l.What = "file"
	}
	return l
}

// ReadFile reads the file at path, at most one byte more than MaxBytes so
// that a huge file (or a device) is refused without being read whole, and
// checks it against the limits; a file it returns may be given to the HCL
// parser. Every refusal is a diagnostic naming the file, and where the
// nesting went too deep, its line and column.
func (l Limits) ReadFile(path string) ([]byte, hcl.Diagnostics) {
	l = l.withDefaults()
	src, err := readUpTo(path, int64(l.MaxBytes)+1)
	if err != nil {
		return nil, hcl.Diagnostics{{
			Severity: hcl.DiagError,
			Summary:  "Cannot read " + l.What,
			Detail:   err.Error() + ".",
			Subject:  &hcl.Range{Filename: path},
		}}
	}
	if diags := l.Check(path, src); diags.HasErrors() {
		return nil, diags
	}
	return src, nil
}

// ReadAtMost reads the file at path when it holds at most max bytes, and
// says so, naming the file and the limit, when it holds more. For files
// whose parser does not recurse (PEM, JSON with encoding/json's own depth
// limit), where size is the one bound needed.
func ReadAtMost(path string, max int64) ([]byte, error) {
	b, err := readAtMost(path, max)
	var pathErr *fs.PathError
	if errors.As(err, &pathErr) {
		return nil, err // names the path already
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return b, nil
}

func readAtMost(path string, max int64) ([]byte, error) {
	b, err := readUpTo(path, max+1)
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("larger than %s, the limit; nothing was parsed", Size(max))
	}
	return b, nil
}

// readUpTo reads at most n bytes of the file at path.
func readUpTo(path string, n int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, n))
}

// Size writes n bytes as the limits are documented: "1 MiB", "64 KiB".
func Size(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// Check reports src (the file at path) when it is over MaxBytes or nested
// deeper than MaxNesting, naming where. It lexes src, which does not
// recurse.
func (l Limits) Check(path string, src []byte) hcl.Diagnostics {
	l = l.withDefaults()
	if len(src) > l.MaxBytes {
		return hcl.Diagnostics{{
			Severity: hcl.DiagError,
			Summary:  tooLarge(l.What),
			Detail:   fmt.Sprintf("The file is larger than %d bytes (%s), the limit. Nothing was parsed.", l.MaxBytes, Size(int64(l.MaxBytes))),
			Subject:  &hcl.Range{Filename: path},
		}}
	}
	tokens, _ := hclsyntax.LexConfig(src, path, hcl.InitialPos)
	// levels holds, for each open bracket, the operators and traversal
	// steps chained in the expression at that level so far: the parser
	// recurses into a unary operator's operand, a conditional's branches
	// and each step after a splat, and evaluation recurses through a
	// chain of binary operators and of traversal steps.
	levels := []int{0}
	depth := func() int { return len(levels) - 1 + levels[len(levels)-1] }
	prev := hclsyntax.TokenNil
	for _, tok := range tokens {
		switch tok.Type {
		case hclsyntax.TokenOBrack:
			if endsValue[prev] {
				// x[0], x[*]: a step applied to what precedes it.
				levels[len(levels)-1]++
			}
			levels = append(levels, 0)
		case hclsyntax.TokenDot:
			levels[len(levels)-1]++ // x.a, x.*
		case hclsyntax.TokenOBrace, hclsyntax.TokenOParen,
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
		prev = tok.Type
		if depth() > l.MaxNesting {
			rng := tok.Range
			return hcl.Diagnostics{{
				Severity: hcl.DiagError,
				Summary:  "Nesting too deep",
				Detail:   fmt.Sprintf("Blocks, brackets, strings, operators or traversal steps chained in one expression reach more than %d levels here, the limit of a %s. Nothing was parsed.", l.MaxNesting, l.What),
				Subject:  &rng,
			}}
		}
	}
	return nil
}

func tooLarge(what string) string {
	if what == "" {
		return "File too large"
	}
	return string(what[0]-'a'+'A') + what[1:] + " too large"
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

// endsValue are the tokens a value can end with: a bracket after one is an
// index or a splat, not a tuple.
var endsValue = map[hclsyntax.TokenType]bool{
	hclsyntax.TokenIdent: true, hclsyntax.TokenNumberLit: true,
	hclsyntax.TokenCBrack: true, hclsyntax.TokenCParen: true, hclsyntax.TokenCBrace: true,
	hclsyntax.TokenCQuote: true, hclsyntax.TokenCHeredoc: true,
}
