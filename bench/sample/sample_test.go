package sample_test

import (
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2/hclparse"

	"github.com/plugkit-go/plugkit/bench/sample"
)

// TestPluginBlock: the sample's safety block comes out whole, as valid
// HCL, with the path it is given and nothing of the next block.
func TestPluginBlock(t *testing.T) {
	block, err := sample.PluginBlock("../../config.hcl", "safety", "/opt/safety")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(block, `plugin "safety" {`) || !strings.Contains(block, `path = "/opt/safety"`) ||
		strings.Contains(block, "bin/plugins/safety") || strings.Contains(block, `plugin "audit"`) ||
		!strings.Contains(block, `deny "no-secrets"`) {
		t.Fatalf("block:\n%s", block)
	}
	if _, diags := hclparse.NewParser().ParseHCL([]byte(block), "block.hcl"); diags.HasErrors() {
		t.Fatalf("not HCL: %v\n%s", diags, block)
	}
	if _, err := sample.PluginBlock("../../config.hcl", "nothing", "/x"); err == nil {
		t.Fatal("a block the file does not have: no error")
	}
}
