//go:build !(darwin || dragonfly || freebsd || linux || netbsd || openbsd)

package main

import "os"

// lockFile does nothing where flock(2) is missing: there, keeping one
// writer per log is the deployment's job.
func lockFile(*os.File) error { return nil }
