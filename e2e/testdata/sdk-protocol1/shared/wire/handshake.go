package wire

import (
	"github.com/hashicorp/go-plugin"
)

// ProtocolVersion is the plugkit protocol version: the go-plugin handshake's
// ProtocolVersion and DescribeResponse.protocol_version.
//
// History:
//   - 1: first version. Plugin and Host services of package plugkit.v1, values
//     as JSON bytes, plugin-chosen handler ids, FILTER and WRAP listeners with
//     Host.Next call tokens, stage-5 results on one client stream.
//
// Bump it only for a change an older host or plugin cannot survive (a removed
// field, a changed meaning); added fields and RPCs keep the version. A host
// that supports several versions lists them in go-plugin's VersionedPlugins.
const ProtocolVersion = 1

// Handshake is the go-plugin handshake both sides must agree on. The cookie is
// not a secret: it only stops a user from running a plugin binary by hand and
// wondering why it prints a protocol line.
var Handshake = plugin.HandshakeConfig{
	ProtocolVersion:  ProtocolVersion,
	MagicCookieKey:   "PLUGKIT_PLUGIN",
	MagicCookieValue: "5f0c2a9e4b7d41c8a3e6d1b9f27c8e04",
}

// PluginName is the single entry of the go-plugin plugin map: what the host
// Dispenses and what the plugin serves.
const PluginName = "plugkit"
