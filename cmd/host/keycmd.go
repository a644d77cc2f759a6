package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/plugkit-go/plugkit/authn"
	"github.com/plugkit-go/plugkit/deployment"
)

// keyCommand is `host key add NAME`: an API key for MCP over HTTP.
func keyCommand(e *env) *cobra.Command {
	key := &cobra.Command{Use: "key", Short: "Manage the API keys of MCP over HTTP"}
	var file, kind string
	var attrs []string
	add := &cobra.Command{
		Use:   "add NAME",
		Short: "Make an API key, print it once, and add its hash to the keys file",
		Long: "Make a random API key named NAME, print it on stdout once, and append its\n" +
			"SHA-256 (never the key) to the keys file: the host block's mcp_auth keys,\n" +
			"or --file. A client sends it as Authorization: Bearer KEY; its calls are\n" +
			"made for KIND:NAME with the given attributes. The host reads the file again\n" +
			"on `host reload`.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			path := file
			if path == "" {
				path = e.keysFile()
			}
			k, err := authn.NewKey(path, args[0], kind, attrs)
			if err != nil {
				return fail(exitUsage, "key add: %v", err)
			}
			if e.json {
				return printJSON(e.stdout, map[string]any{"ok": true, "name": args[0], "key": k, "file": path})
			}
			fmt.Fprintln(e.stdout, k)
			fmt.Fprintf(e.stderr, "added key %q to %s: this is the only time the key is shown, store it now\n", args[0], shortPath(path))
			return nil
		},
	}
	add.Flags().StringVarP(&file, "file", "f", "", "keys file (default: the deployment's mcp_auth keys, else keys.hcl beside it)")
	add.Flags().StringVar(&kind, "kind", "agent", "the key's principal kind: user, agent or service")
	add.Flags().StringArrayVar(&attrs, "attribute", nil, "an attribute of the key's principal, key:value (group:readers); repeat for more")
	key.AddCommand(add)
	return key
}

// keysFile is the deployment's keys file, or keys.hcl beside it.
func (e *env) keysFile() string {
	if _, err := os.Stat(e.config); err == nil {
		if d, _ := deployment.Parse(e.config); d != nil && d.Host.MCPAuth != nil {
			return d.Host.MCPAuth.Keys
		}
	}
	return filepath.Join(filepath.Dir(e.config), "keys.hcl")
}

// shortPath is path relative to the working folder when it is below it.
func shortPath(path string) string {
	wd, err := os.Getwd()
	if err != nil {
		return path
	}
	if rel, err := filepath.Rel(wd, path); err == nil && filepath.IsLocal(rel) {
		return rel
	}
	return path
}
