package transcript_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestGuideFileSnippets: a code block that a guide introduces with
// <!-- the file PATH --> is that file of the repository, byte for byte, so
// that a guide's example is the one the tests run.
func TestGuideFileSnippets(t *testing.T) {
	marker := regexp.MustCompile("(?m)^<!-- the file (\\S+) -->\n```[a-z]*\n")
	found := 0
	for _, guide := range []string{"writing-a-plugin.md", "writing-a-python-plugin.md"} {
		page, err := os.ReadFile(filepath.Join(root, "docs", guide))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range marker.FindAllSubmatchIndex(page, -1) {
			found++
			path := string(page[m[2]:m[3]])
			block, _, ok := strings.Cut(string(page[m[1]:]), "```\n")
			if !ok {
				t.Errorf("docs/%s: the block of %s does not end", guide, path)
				continue
			}
			file, err := os.ReadFile(filepath.Join(root, path))
			if err != nil {
				t.Errorf("docs/%s quotes %s: %v", guide, path, err)
				continue
			}
			if block != string(file) {
				t.Errorf("docs/%s: the block quoting %s is not that file; paste the file in again", guide, path)
			}
		}
	}
	if found < 2 {
		t.Errorf("the guides quote %d files, want the Go and the Python test examples at least", found)
	}
}
