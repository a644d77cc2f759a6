package main

import (
	"encoding/json"
	"fmt"
	"maps"
)

// askSchema adds to base the ask rules: an array of the deny rules' items
// with approval, a string naming an approval route (the host checks the
// name against the deployment through the format). It panics on a base
// that is not JSON: base is a constant of this file's package, which
// TestSchemaMatchesConfig compiles.
func askSchema(base string) string {
	var doc map[string]any
	if err := json.Unmarshal([]byte(base), &doc); err != nil {
		panic(fmt.Sprintf("safety: config schema: %v", err))
	}
	props := doc["properties"].(map[string]any)
	deny := props["deny"].(map[string]any)
	items := maps.Clone(deny["items"].(map[string]any))
	itemProps := maps.Clone(items["properties"].(map[string]any))
	itemProps["approval"] = map[string]any{
		"type": "string", "minLength": 1, "format": "approval-route",
		"description": "The approval route the question goes to: an approval block of the deployment, or \"caller\" for the client that made the call; the route whose tools match when absent.",
	}
	items["properties"] = itemProps
	props["ask"] = map[string]any{
		"description": "Ask rules, one block each, written as deny rules are: a call one matches is asked about in stage 1 instead of denied; the first in file order asks.",
		"type":        "array",
		"items":       items,
	}
	out, err := json.Marshal(doc)
	if err != nil {
		panic(fmt.Sprintf("safety: config schema: %v", err))
	}
	return string(out)
}
