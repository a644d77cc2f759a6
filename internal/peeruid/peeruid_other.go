//go:build !linux

package peeruid

import "net/netip"

func lookup(server, client netip.AddrPort) (Socket, error) { return Socket{}, ErrUnsupported }

func processes(Socket) ([]int, error) { return nil, ErrUnsupported }

func lookupTables(server, client netip.AddrPort) (Socket, error) { return Socket{}, ErrUnsupported }

func heldAmong(Socket, []int) []int { return nil }
