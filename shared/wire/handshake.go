package wire

import (
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/hashicorp/go-plugin"
)

// ProtocolVersion is the plugkit protocol version: the go-plugin handshake's
// ProtocolVersion and DescribeResponse.protocol_version.
//
// History:
//   - 1: first version. Plugin and Host services of package plugkit.v1, values
//     as JSON bytes, plugin-chosen handler ids, FILTER and WRAP listeners with
//     Host.Next call tokens, stage-5 results on one client stream.
//   - 2: calls as frames. A plugin may serve the host's calls as CallFrames
//     on the Plugin.Calls stream and on an inherited call lane, and call the
//     host back on a second lane (DescribeResponse.call_stream, call_lanes;
//     shared/README.md). Only a plugin that speaks 2 is called with frames:
//     one that speaks 1 gets an RPC per call, as before.
//
// Bump it for a change an older host or plugin cannot survive (a removed
// field, a changed meaning) or, as for 2, for a new way of calling that
// both sides must know of. Host and SDK speak every version in
// ProtocolVersions, through go-plugin's VersionedPlugins: the newest both
// sides speak is used, so an older plugin is still served and an SDK
// plugin still runs under an older host.
const ProtocolVersion = 2

// ProtocolVersions are the versions host and SDK speak, oldest first.
var ProtocolVersions = []int{1, 2}

// FramesVersion is the first version whose plugins are called with frames.
const FramesVersion = 2

// NegotiatedVersion is the version go-plugin settles on in a plugin
// process: the newest of versions that the host offers in its
// environment (PLUGIN_PROTOCOL_VERSIONS), or ProtocolVersion when the host
// says nothing; 0 when they share none.
func NegotiatedVersion(versions []int) int {
	offered := os.Getenv("PLUGIN_PROTOCOL_VERSIONS")
	if offered == "" {
		return ProtocolVersion
	}
	best := 0
	for _, s := range strings.Split(offered, ",") {
		if v, err := strconv.Atoi(strings.TrimSpace(s)); err == nil && v > best && slices.Contains(versions, v) {
			best = v
		}
	}
	return best
}

// Handshake is the go-plugin handshake both sides must agree on. The cookie is
// not a secret: it only stops a user from running a plugin binary by hand and
// wondering why it prints a protocol line.
var Handshake = plugin.HandshakeConfig{
	ProtocolVersion:  ProtocolVersion,
	MagicCookieKey:   "PLUGKIT_PLUGIN",
	MagicCookieValue: "5f0c2a9e4b7d41c8a3e6d1b9f27c8e04",
}

// EnvHost is set in every plugin's environment to the host process's id:
// two processes of a plugin with the same value belong to one host (a hot
// reload's old and new process), so a file one of them holds is handed
// over, not fought over.
const EnvHost = "PLUGKIT_HOST"

// EnvExplainOnly is set to "1" in a plugin's environment when its host
// makes no call for real (`host test` without a case that executes): a
// plugin may then leave alone what only a real call needs, such as a log
// another host writes.
const EnvExplainOnly = "PLUGKIT_EXPLAIN_ONLY"

// PluginName is the single entry of the go-plugin plugin map: what the host
// Dispenses and what the plugin serves.
const PluginName = "plugkit"
