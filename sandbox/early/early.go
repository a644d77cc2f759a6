// Package early serves the sandbox launcher (sandbox.Subcommand) while the
// binary that imports it initializes, before most of its packages do: a
// binary's packages are initialized in import-path order once their own
// imports are, and this one needs only package sandbox, so the launcher
// runs before the packages the host needs and the launcher does not (JSON
// Schema's alone takes 5-15 ms). That keeps a sandboxed start within a few
// milliseconds of an unconfined one.
//
// Only a binary that is its own sandbox launcher imports it, for that
// effect alone, and says so where it does (cmd/host's main):
//
//	import _ "github.com/plugkit-go/plugkit/sandbox/early"
package early

import "github.com/plugkit-go/plugkit/sandbox"

func init() { sandbox.RunIfLauncher() }
