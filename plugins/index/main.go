// Command index is a plugkit plugin that provides the "index" service: a
// full-text index (bleve) over the files of one folder, built when the plugin
// is applied, so that other plugins (the search tool) can ask it for ranked
// matches without reading the folder themselves.
//
// Its configuration, as a deployment's config block:
//
//	config {
//	  root       = "corpus"            # required: the folder to index
//	  extensions = [".md", ".txt"]     # optional; this is the default
//	  index_path = "var/index.bleve"   # optional; default: in memory
//	}
//
// Relative paths are resolved against the plugin's working folder, which the
// host sets to the deployment file's folder. The index is rebuilt at every
// apply, so a large folder lengthens the plugin's start. The service's
// methods are documented on searchMethod and statsMethod.
package main

import "github.com/plugkit-go/plugkit/shared/sdk"

func main() {
	sdk.Serve(newPlugin().definition())
}
