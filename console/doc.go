// Package console is the host's web console: where approvers answer the
// requests of approval routes and operators see the plugins, the tools
// and recent audit lines (read by the host, filtered by tool, principal
// and outcome).
// Server-rendered HTML (html/template) with every asset embedded and no
// JavaScript, so it works with no network; a sign-in with the same
// credentials as MCP (an API key, an OAuth access token), or for the
// host's own user on loopback none (the lineage check of loopback MCP),
// makes a session that expires; every form carries the session's CSRF token; every page is
// served with a strict Content-Security-Policy.
package console
