//go:build !linux

package sdk

import "github.com/hashicorp/go-hclog"

// parentDeathSignal: only Linux has one; the parent watch covers the rest.
func parentDeathSignal(hclog.Logger, int, func(string)) {}
