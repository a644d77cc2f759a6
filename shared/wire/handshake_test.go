package wire

import "testing"

// TestNegotiatedVersion: a plugin takes the newest version both it and the
// host speak, as go-plugin does.
func TestNegotiatedVersion(t *testing.T) {
	for _, tc := range []struct {
		offered string
		speaks  []int
		want    int
	}{
		{"", []int{1, 2}, ProtocolVersion}, // a host that says nothing
		{"1,2", []int{1, 2}, 2},
		{"2,1", []int{1, 2}, 2},
		{"1", []int{1, 2}, 1}, // an older host
		{"1,2", []int{1}, 1},  // an older plugin
		{"3", []int{1, 2}, 0}, // nothing in common
		{"x,2", []int{1, 2}, 2},
	} {
		t.Setenv("PLUGIN_PROTOCOL_VERSIONS", tc.offered)
		if got := NegotiatedVersion(tc.speaks); got != tc.want {
			t.Errorf("host offers %q, plugin speaks %v: got %d, want %d", tc.offered, tc.speaks, got, tc.want)
		}
	}
}
