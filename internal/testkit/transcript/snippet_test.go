package transcript_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The Python guide prints plugins/python-example/plugin.py whole: a copy
// that drifted (it once lost its imports, so pasting it gave a NameError)
// fails here.
func TestPythonGuideSnippetIsThePlugin(t *testing.T) {
	page, err := os.ReadFile(filepath.Join(root, "docs", "writing-a-python-plugin.md"))
	if err != nil {
		t.Fatal(err)
	}
	file, err := os.ReadFile(filepath.Join(root, "plugins", "python-example", "plugin.py"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(page), "```python\n")
	if !ok {
		t.Fatal("docs/writing-a-python-plugin.md: no python block")
	}
	block, _, ok := strings.Cut(rest, "```\n")
	if !ok {
		t.Fatal("docs/writing-a-python-plugin.md: the python block does not end")
	}
	if block != string(file) {
		t.Errorf("the python block of docs/writing-a-python-plugin.md is not plugins/python-example/plugin.py; paste the file in again")
	}
}
