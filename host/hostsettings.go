package host

import (
	"reflect"
	"strings"
	"unicode"

	"github.com/hashicorp/hcl/v2"

	"github.com/plugkit-go/plugkit/deployment"
)

// HostSettingsChanged is the Extra of a reload's "Host settings changed"
// warning: the settings of the host block, by their names in the file,
// that the new file changes and that take effect only when the host is
// started again. The CLI names them and exits with a code of its own.
type HostSettingsChanged struct{ Settings []string }

// changedHostSettings names the host block's settings that differ between
// a and b. The default sandbox is left out: it is part of each plugin's
// spec, so a change to it reloads the plugins.
func changedHostSettings(a, b deployment.Host) []string {
	va, vb := reflect.ValueOf(a), reflect.ValueOf(b)
	var out []string
	for i := 0; i < va.NumField(); i++ {
		f := va.Type().Field(i)
		if !f.IsExported() || f.Name == "Sandbox" || f.Type == reflect.TypeOf(hcl.Range{}) {
			// Where a setting is written is not a setting: a line added
			// above it moves it.
			continue
		}
		if !reflect.DeepEqual(va.Field(i).Interface(), vb.Field(i).Interface()) {
			out = append(out, settingName(f.Name))
		}
	}
	return out
}

// settingName is a Host field's name in the file: AdminSocket is
// admin_socket, MCPMaxConnsPerPeer mcp_max_conns_per_peer.
func settingName(field string) string {
	if field == "MCPTLS" {
		return "mcp_tls" // no lower-case letter marks where the words meet
	}
	r := []rune(field)
	var b strings.Builder
	for i, c := range r {
		if unicode.IsUpper(c) && i > 0 &&
			(unicode.IsLower(r[i-1]) || i+1 < len(r) && unicode.IsLower(r[i+1])) {
			b.WriteByte('_')
		}
		b.WriteRune(unicode.ToLower(c))
	}
	return b.String()
}
