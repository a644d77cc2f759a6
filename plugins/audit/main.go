package main

import (
	"os"

	"github.com/plugkit-go/plugkit/shared/sdk"
	"github.com/plugkit-go/plugkit/shared/wire"
)

func main() {
	// The host starts plugins without arguments and with its handshake
	// cookie; anything else means a person runs a command (no arguments:
	// the usage). This must come before Serve, which owns stdout.
	if len(os.Args) > 1 || os.Getenv(wire.Handshake.MagicCookieKey) != wire.Handshake.MagicCookieValue {
		os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
	}
	sdk.Serve(newPlugin())
}
