// Command search is a plugkit plugin that gives models a read-only "search"
// tool over a folder of documents. It keeps no index of its own: it asks the
// "index" service (the index plugin) for ranked matches, so the engine behind
// the tool can change without the tool changing.
//
// It takes no configuration; what is searched is the index plugin's config.
// The tool's contract is on searchTool.
package main

import "github.com/plugkit-go/plugkit/shared/sdk"

func main() {
	sdk.Serve(definition())
}
