package deployment

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/hashicorp/hcl/v2"
)

// Format prints diagnostics one line each, in the order given (Parse and
// Check return them sorted by position):
//
//	file:line:col: Summary: Detail
//
// The file is as the diagnostic names it: Parse uses the path it was given.
// A warning has "warning: " before its summary; a diagnostic without a
// position starts at its summary.
func Format(diags hcl.Diagnostics) string {
	var b strings.Builder
	for _, d := range diags {
		if s := d.Subject; s != nil && s.Filename != "" {
			b.WriteString(s.Filename)
			if s.Start.Line > 0 {
				fmt.Fprintf(&b, ":%d:%d", s.Start.Line, s.Start.Column)
			}
			b.WriteString(": ")
		}
		if d.Severity == hcl.DiagWarning {
			b.WriteString("warning: ")
		}
		b.WriteString(oneLine(d.Summary))
		if d.Detail != "" {
			b.WriteString(": ")
			b.WriteString(oneLine(d.Detail))
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// oneLine keeps one problem on one line.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// sortDiags orders diagnostics by file and position, keeping the order of
// those at the same place; those without a position come first.
func sortDiags(diags hcl.Diagnostics) hcl.Diagnostics {
	slices.SortStableFunc(diags, func(a, b *hcl.Diagnostic) int {
		var ra, rb hcl.Range
		if a.Subject != nil {
			ra = *a.Subject
		}
		if b.Subject != nil {
			rb = *b.Subject
		}
		return cmp.Or(
			cmp.Compare(ra.Filename, rb.Filename),
			cmp.Compare(ra.Start.Line, rb.Start.Line),
			cmp.Compare(ra.Start.Column, rb.Start.Column),
		)
	})
	return diags
}

// errorAt makes an error diagnostic.
func errorAt(subject hcl.Range, summary, format string, args ...any) *hcl.Diagnostic {
	return &hcl.Diagnostic{
		Severity: hcl.DiagError,
		Summary:  summary,
		Detail:   fmt.Sprintf(format, args...),
		Subject:  subject.Ptr(),
	}
}

// at renders a range's start as file:line for "declared at" details.
func at(r hcl.Range) string {
	return fmt.Sprintf("%s:%d", r.Filename, r.Start.Line)
}
