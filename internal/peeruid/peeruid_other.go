//go:build !linux

package peeruid

import "net/netip"

func lookup(server, client netip.AddrPort) (Socket, error) { return Socket{}, ErrUnsupported }

func processes(Socket) ([]int, error) { return nil, ErrUnsupported }
