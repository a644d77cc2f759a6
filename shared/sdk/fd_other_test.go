//go:build !unix

package sdk

func fdIsStderr(int) bool { return true }
