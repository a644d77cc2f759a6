package remote

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/plugkit-go/plugkit/shared/wire"
)

// goPluginMismatch is go-plugin's error for a plugin whose handshake names a
// protocol version the host does not speak.
var goPluginMismatch = regexp.MustCompile(`incompatible API version with plugin\. Plugin version: (\d+), Client versions: \[([\d ]*)\]`)

// protocolMismatch turns go-plugin's version error into the plugkit terms
// a plugin's author can act on, naming both versions; nil for any other
// error.
func protocolMismatch(msg string) error {
	m := goPluginMismatch.FindStringSubmatch(msg)
	if m == nil {
		return nil
	}
	v, _ := strconv.Atoi(m[1])
	host := strings.ReplaceAll(strings.TrimSpace(m[2]), " ", ", ")
	newest := wire.ProtocolVersions[len(wire.ProtocolVersions)-1]
	if v > newest {
		return fmt.Errorf("the plugin speaks plugkit protocol %d, newer than this host's (it speaks %s): upgrade the host, or build the plugin with an SDK of protocol %d (docs/sdk-versions.md)", v, host, newest)
	}
	return fmt.Errorf("the plugin speaks plugkit protocol %d, which this host no longer speaks (it speaks %s): build the plugin with a newer SDK (docs/sdk-versions.md)", v, host)
}
