#!/usr/bin/env bash
# Measures plugkit as an MCP gateway beside supergateway and mcp-proxy, and
# the upstream served directly, on this machine (see bench/peers/main.go and
# docs/performance.md). Installs the pinned npm peers into a folder of their
# own (PEERS_DIR, bench/.peers by default), builds the host and the plugins
# it runs, then prints one table. Needs Node.js and npm.
#
#   make bench-peers                      # 3 rounds of 5 s per phase
#   ROUNDS=5 DURATION=10s make bench-peers
#   BIN_BEFORE=/path/to/other/bin make bench-peers   # another build beside
set -euo pipefail
cd "$(dirname "$0")/.."

PEERS_DIR=${PEERS_DIR:-bench/.peers}
ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-5s}
SESSIONS=${SESSIONS:-16}
PEERS=(supergateway@4.0.0 mcp-proxy@6.7.19 @modelcontextprotocol/server-everything@2026.8.31)

installed() { # name@version: is that version in PEERS_DIR?
	local name=${1%@*} version=${1##*@}
	[ -f "$PEERS_DIR/node_modules/$name/package.json" ] &&
		node -e 'process.exit(require(process.argv[1]).version === process.argv[2] ? 0 : 1)' \
			"$(realpath "$PEERS_DIR/node_modules/$name/package.json")" "$version"
}
missing=()
for p in "${PEERS[@]}"; do installed "$p" || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
	mkdir -p "$PEERS_DIR"
	echo "installing ${missing[*]} into $PEERS_DIR" >&2
	npm install --prefix "$PEERS_DIR" --no-audit --no-fund --save-exact "${PEERS[@]}" >&2
fi

GO=${GO:-go}
mkdir -p bin/plugins
$GO build -o bin/host ./cmd/host
for p in mcp safety audit; do $GO build -o "bin/plugins/$p" "./plugins/$p"; done
exec $GO run ./bench/peers -peers "$PEERS_DIR" -bin bin -bin-before "${BIN_BEFORE:-}" \
	-rounds "$ROUNDS" -duration "$DURATION" -sessions "$SESSIONS"
