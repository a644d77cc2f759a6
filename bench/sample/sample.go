// Package sample reads pieces of the sample deployment (config.hcl at the
// repository's root), so that benchmarks run its rules as they are
// written, not a copy that drifts from them.
package sample

import (
	"fmt"
	"os"
	"regexp"
	"strings"
)

// pathLine is a block's first path attribute.
var pathLine = regexp.MustCompile(`(?m)^(\s*)path\s*=.*$`)

// PluginBlock is the plugin block name of the deployment file config, from
// its `plugin "name" {` line through the brace that closes it at the start
// of a line, with its path set to path.
func PluginBlock(config, name, path string) (string, error) {
	raw, err := os.ReadFile(config)
	if err != nil {
		return "", err
	}
	text := string(raw)
	start := strings.Index(text, fmt.Sprintf("plugin %q {\n", name))
	if start < 0 {
		return "", fmt.Errorf("%s has no plugin %q block", config, name)
	}
	end := strings.Index(text[start:], "\n}\n")
	if end < 0 {
		return "", fmt.Errorf("%s: the plugin %q block does not end with a } of its own line", config, name)
	}
	block := text[start : start+end+3]
	loc := pathLine.FindStringSubmatchIndex(block)
	if loc == nil {
		return "", fmt.Errorf("%s: the plugin %q block has no path", config, name)
	}
	indent := block[loc[2]:loc[3]]
	return block[:loc[0]] + fmt.Sprintf("%spath = %q", indent, path) + block[loc[1]:], nil
}
