// Package e2e holds the system tests: they build the host (./cmd/host) and
// the shipped plugins once, write deployment files and drive the real
// binaries as a user would — the CLI, MCP clients (Go, TypeScript, a
// browser) against a running host, replicas behind HAProxy sharing Redis,
// and the attack, load and reload tests. It has no code of its own but
// this file: the unit tests of the CLI's own code stay in cmd/host.
package e2e
