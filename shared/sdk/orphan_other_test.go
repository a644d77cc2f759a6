//go:build !linux

package sdk

// runTestHost is only needed by the Linux orphan test.
func runTestHost() {}
