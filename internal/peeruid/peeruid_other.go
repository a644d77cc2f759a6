//go:build !linux

package peeruid

import "net/netip"

func lookup(server, client netip.AddrPort) (int, error) { return 0, ErrUnsupported }
