package egress

import (
	"net/netip"
	"strings"
	"testing"
)

func TestParseRule(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"api.github.com", "api.github.com:443"},
		{"API.GitHub.com.", "api.github.com:443"},
		{"*.slack.com:443", "*.slack.com:443"},
		{"example.com:80", "example.com:80"},
		{"10.0.0.0/8:5432", "10.0.0.0/8:5432"},
		{"192.0.2.7", "192.0.2.7/32:443"},
		{"2001:db8::/32", "[2001:db8::/32]:443"},
		{"[2001:db8::/32]:8443", "[2001:db8::/32]:8443"},
		{"[::1]:22", "[::1/128]:22"},
		{"::ffff:10.0.0.0/104", "10.0.0.0/8:443"},
	} {
		r, err := ParseRule(tc.in)
		if err != nil {
			t.Errorf("ParseRule(%q): %v", tc.in, err)
			continue
		}
		if r.String() != tc.want {
			t.Errorf("ParseRule(%q) = %s, want %s", tc.in, r, tc.want)
		}
	}
}

func TestParseRuleRefuses(t *testing.T) {
	for _, tc := range []struct{ in, why string }{
		{"", "empty"},
		{"example.com:0", "port"},
		{"example.com:70000", "port"},
		{"example.com:https", "port"},
		{"*.com", "two labels"},
		{"a.*.example.com", "first label"},
		{"*", "wildcard"},
		{"exa mple.com", "only letters"},
		{"-x.example.com", "'-'"},
		{"10.0.0.1/8", "bits set"},
		{"10.0.0", "not an address"},
		{"[2001:db8::", "closing"},
		{"[::1]x", "only :PORT"},
		{"fe80::1%eth0", "zone"},
	} {
		_, err := ParseRule(tc.in)
		if err == nil || !strings.Contains(err.Error(), tc.why) {
			t.Errorf("ParseRule(%q) = %v, want an error saying %q", tc.in, err, tc.why)
		}
	}
}

func TestParseListNamesEachBadEntry(t *testing.T) {
	_, err := ParseList([]string{"ok.example.com", "bad name", "x.example.com:0"})
	if err == nil || !strings.Contains(err.Error(), "entry 2") || !strings.Contains(err.Error(), "entry 3") {
		t.Fatalf("ParseList = %v, want errors for entries 2 and 3", err)
	}
}

func TestMatch(t *testing.T) {
	l, err := ParseList([]string{"api.github.com", "*.slack.com:8443", "10.0.0.0/8:5432"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		host string
		port uint16
		want bool
	}{
		{"api.github.com", 443, true},
		{"api.github.com", 80, false},
		{"github.com", 443, false},
		{"x.api.github.com", 443, false},
		{"a.slack.com", 8443, true},
		{"a.b.slack.com", 8443, true},
		{"slack.com", 8443, false},
		{"evilslack.com", 8443, false},
	} {
		if got := l.allowsName(tc.host, tc.port); got != tc.want {
			t.Errorf("allowsName(%s, %d) = %v, want %v", tc.host, tc.port, got, tc.want)
		}
	}
	if !l.allowsRange(netip.MustParseAddr("10.1.2.3"), 5432) || l.allowsRange(netip.MustParseAddr("10.1.2.3"), 443) {
		t.Error("range 10.0.0.0/8:5432 not matched by port")
	}
	if !l.allowsRange(netip.MustParseAddr("::ffff:10.1.2.3"), 5432) {
		t.Error("an IPv4-mapped address is not matched as IPv4")
	}
}

func TestSpecial(t *testing.T) {
	for _, s := range []string{"169.254.169.254", "127.0.0.1", "10.9.9.9", "172.20.0.1", "192.168.1.1", "100.64.0.1", "0.0.0.0",
		"::1", "::", "fd00::1", "fe80::1", "::ffff:127.0.0.1", "::ffff:169.254.169.254", "64:ff9b::a9fe:a9fe", "ff02::1", "224.0.0.1"} {
		if !Special(netip.MustParseAddr(s)) {
			t.Errorf("Special(%s) = false", s)
		}
	}
	for _, s := range []string{"93.184.215.14", "140.82.112.6", "2606:4700::1111"} {
		if Special(netip.MustParseAddr(s)) {
			t.Errorf("Special(%s) = true", s)
		}
	}
}
