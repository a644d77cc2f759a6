package egress

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// DefaultPort is the port of an entry that names none: HTTPS.
const DefaultPort = 443

// Rule is one entry of an allow-list: a host name, a wildcard of names
// ("*.slack.com": any name below slack.com, not slack.com itself) or an
// address range, and one port.
type Rule struct {
	// Name is a lower-case host name or "*." and one; empty for a range.
	Name string
	// Range is the addresses of an entry written as an address or a
	// range; invalid for a name.
	Range netip.Prefix
	Port  uint16
}

func (r Rule) String() string {
	host := r.Name
	if r.Range.IsValid() {
		host = r.Range.String()
		if r.Range.Addr().Is6() {
			host = "[" + host + "]"
		}
	}
	return host + ":" + strconv.Itoa(int(r.Port))
}

// matchName reports whether host (lower case, no trailing dot) is the
// rule's name or below its wildcard.
func (r Rule) matchName(host string) bool {
	if r.Name == "" {
		return false
	}
	if suffix, ok := strings.CutPrefix(r.Name, "*"); ok {
		return strings.HasSuffix(host, suffix) && len(host) > len(suffix)
	}
	return host == r.Name
}

// ParseRule reads one entry: NAME, *.NAME, ADDRESS or RANGE (CIDR), each
// with an optional :PORT (DefaultPort when left out); an IPv6 address or
// range with a port is written in brackets ("[2001:db8::/32]:443").
func ParseRule(s string) (Rule, error) {
	in := s
	s = strings.TrimSpace(s)
	if s == "" {
		return Rule{}, errors.New("an empty entry")
	}
	host, port := s, uint16(DefaultPort)
	switch {
	case strings.HasPrefix(s, "["):
		end := strings.Index(s, "]")
		if end < 0 {
			return Rule{}, fmt.Errorf("%q: no closing ']'", in)
		}
		host = s[1:end]
		rest := s[end+1:]
		if rest != "" {
			p, ok := strings.CutPrefix(rest, ":")
			if !ok {
				return Rule{}, fmt.Errorf("%q: only :PORT may follow ']'", in)
			}
			n, err := parsePort(p)
			if err != nil {
				return Rule{}, fmt.Errorf("%q: %w", in, err)
			}
			port = n
		}
	case strings.Count(s, ":") == 1:
		h, p, _ := strings.Cut(s, ":")
		n, err := parsePort(p)
		if err != nil {
			return Rule{}, fmt.Errorf("%q: %w", in, err)
		}
		host, port = h, n
	}
	if pfx, err := parseRange(host); err == nil {
		return Rule{Range: pfx, Port: port}, nil
	} else if strings.ContainsAny(host, ":/") || isNumeric(host) {
		return Rule{}, fmt.Errorf("%q: %w", in, err)
	}
	name := strings.TrimSuffix(strings.ToLower(host), ".")
	check := strings.TrimPrefix(name, "*.")
	if strings.Contains(check, "*") {
		return Rule{}, fmt.Errorf("%q: a wildcard is allowed only as the first label (*.example.com)", in)
	}
	if err := checkName(check); err != nil {
		return Rule{}, fmt.Errorf("%q: %w", in, err)
	}
	if name != check && !strings.Contains(check, ".") {
		return Rule{}, fmt.Errorf("%q: a wildcard must leave at least two labels (*.example.com, not *.com)", in)
	}
	return Rule{Name: name, Port: port}, nil
}

// parseRange reads an address (a range of one) or a CIDR range, which must
// have no bits set past its length.
func parseRange(s string) (netip.Prefix, error) {
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return netip.Prefix{}, fmt.Errorf("not an address range: %w", err)
		}
		if p.Masked() != p {
			return netip.Prefix{}, fmt.Errorf("range %s has bits set past its length (write %s)", p, p.Masked())
		}
		return netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-unmapBits(p.Addr())), nil
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("not an address: %w", err)
	}
	if a.Zone() != "" {
		return netip.Prefix{}, errors.New("an address with a zone")
	}
	a = a.Unmap()
	return netip.PrefixFrom(a, a.BitLen()), nil
}

func unmapBits(a netip.Addr) int {
	if a.Is4In6() {
		return 96
	}
	return 0
}

func isNumeric(s string) bool {
	return s != "" && strings.Trim(s, "0123456789.") == ""
}

func parsePort(s string) (uint16, error) {
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > 65535 {
		return 0, fmt.Errorf("port %q is not a number from 1 to 65535", s)
	}
	return uint16(n), nil
}

// checkName accepts a DNS host name: labels of letters, digits and '-'
// (not at either end), at most 63 bytes each, 253 in all.
func checkName(s string) error {
	if s == "" {
		return errors.New("an empty host name")
	}
	if len(s) > 253 {
		return errors.New("a host name longer than 253 bytes")
	}
	for _, label := range strings.Split(s, ".") {
		if label == "" || len(label) > 63 {
			return fmt.Errorf("host name %q has an empty label or one longer than 63 bytes", s)
		}
		if label[0] == '-' || label[len(label)-1] == '-' {
			return fmt.Errorf("host name %q has a label starting or ending with '-'", s)
		}
		for _, c := range []byte(label) {
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
				return fmt.Errorf("host name %q has %q: only letters, digits, '-' and '.' are allowed", s, c)
			}
		}
	}
	return nil
}

// List is a plugin's allow-list. The empty list allows nothing.
type List []Rule

// ParseList reads every entry; the error names each bad one by position.
func ParseList(entries []string) (List, error) {
	out := make(List, 0, len(entries))
	var errs []error
	for i, e := range entries {
		r, err := ParseRule(e)
		if err != nil {
			errs = append(errs, fmt.Errorf("entry %d: %w", i+1, err))
			continue
		}
		out = append(out, r)
	}
	return out, errors.Join(errs...)
}

// Strings is the list as entries ParseList reads back.
func (l List) Strings() []string {
	out := make([]string, len(l))
	for i, r := range l {
		out[i] = r.String()
	}
	return out
}

// allowsName reports whether a name entry covers host:port.
func (l List) allowsName(host string, port uint16) bool {
	for _, r := range l {
		if r.Port == port && r.matchName(host) {
			return true
		}
	}
	return false
}

// allowsRange reports whether a range entry covers addr:port.
func (l List) allowsRange(addr netip.Addr, port uint16) bool {
	addr = addr.Unmap()
	for _, r := range l {
		if r.Port == port && r.Range.IsValid() && r.Range.Contains(addr) {
			return true
		}
	}
	return false
}

// special are the ranges no name may lead to unless an entry names them
// as a range: this machine, the private networks, link-local (the cloud
// metadata address 169.254.169.254 among them), carrier-grade NAT,
// multicast, reserved and documentation ranges, and the IPv6 forms that
// reach IPv4 ones (NAT64).
var special = func() []netip.Prefix {
	var out []netip.Prefix
	for _, s := range []string{
		"0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16",
		"172.16.0.0/12", "192.0.0.0/24", "192.0.2.0/24", "192.88.99.0/24", "192.168.0.0/16",
		"198.18.0.0/15", "198.51.100.0/24", "203.0.113.0/24", "224.0.0.0/4", "240.0.0.0/4",
		"::/128", "::1/128", "64:ff9b::/96", "64:ff9b:1::/48", "100::/64", "2001::/32", "2001:db8::/32",
		"2002::/16", "fc00::/7", "fe80::/10", "fec0::/10", "ff00::/8",
	} {
		out = append(out, netip.MustParsePrefix(s))
	}
	return out
}()

// Special reports whether addr is in a range a name may not lead to.
func Special(addr netip.Addr) bool {
	addr = addr.Unmap()
	for _, p := range special {
		if p.Contains(addr) {
			return true
		}
	}
	return false
}
