package main

import (
	"os"

	"github.com/plugkit-go/plugkit/shared/sdk"
)

func main() {
	// The host starts plugins without arguments; any argument means a
	// person runs a command. This must come before Serve, which owns stdout.
	if len(os.Args) > 1 {
		os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
	}
	sdk.Serve(newPlugin())
}
