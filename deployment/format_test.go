package deployment

import (
	"testing"

	"github.com/hashicorp/hcl/v2"
)

func TestFormat(t *testing.T) {
	t.Parallel()
	r := &hcl.Range{Filename: "d.hcl", Start: hcl.Pos{Line: 3, Column: 5}}
	diags := hcl.Diagnostics{
		{Severity: hcl.DiagError, Summary: "First", Detail: "Spread\nover   lines.", Subject: r},
		{Severity: hcl.DiagWarning, Summary: "Careful", Subject: r},
		{Severity: hcl.DiagError, Summary: "No position", Detail: "Anywhere."},
		{Severity: hcl.DiagError, Summary: "File only", Subject: &hcl.Range{Filename: "d.hcl"}},
	}
	want := `d.hcl:3:5: First: Spread over lines.
d.hcl:3:5: warning: Careful
No position: Anywhere.
d.hcl: File only
`
	if got := Format(diags); got != want {
		t.Errorf("Format =\n%s\nwant\n%s", got, want)
	}
}

func TestSortDiags(t *testing.T) {
	t.Parallel()
	at := func(file string, line, col int) *hcl.Diagnostic {
		return &hcl.Diagnostic{Summary: file, Subject: &hcl.Range{Filename: file, Start: hcl.Pos{Line: line, Column: col}}}
	}
	diags := hcl.Diagnostics{at("b", 1, 1), at("a", 2, 1), at("a", 1, 9), at("a", 1, 2), {Summary: "none"}}
	got := Format(sortDiags(diags))
	want := "none\na:1:2: a\na:1:9: a\na:2:1: a\nb:1:1: b\n"
	if got != want {
		t.Errorf("sorted:\n%s\nwant:\n%s", got, want)
	}
}
