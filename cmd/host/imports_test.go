package main

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestCLIImportsOnlyWhatACommandNeeds: the running parts are assembled in
// package server; the CLI loads the file, hands it over, talks to a running
// host through the admin API and prints. A project package it imports
// beyond these is assembly creeping back into the command.
func TestCLIImportsOnlyWhatACommandNeeds(t *testing.T) {
	t.Parallel()
	allowed := []string{
		"admin", "deployment", "host", "server", // the client and the assembly
		"pipeline",                 // explain's and test's types, the result codes
		"shared/identity",          // the principal a command names (--as)
		"shared/secrets",           // what a printed result hides
		"shared/wire",              // the plugin protocol's version, in `host version`
		"authn",                    // `host key`: an API key's hash and the keys file
		"sandbox", "sandbox/early", // the sandbox launcher, which the host binary is too
		"internal/lineage",       // finding the hosts running on this machine
		"internal/hclbound",      // reading a policy test's case file
		"plugins/audit/auditlog", // `host replay` reads an audit log
	}
	out, err := exec.Command("go", "list", "-f", `{{join .Imports "\n"}}`, ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	const mod = "github.com/plugkit-go/plugkit/"
	for _, p := range strings.Fields(string(out)) {
		if rel, ok := strings.CutPrefix(p, mod); ok && !slices.Contains(allowed, rel) {
			t.Errorf("cmd/host imports %s: what runs belongs in package server (or host), which the CLI calls", rel)
		}
	}
}
