package main

import (
	"fmt"
	"net/url"
	"regexp"
	"strings"
)

// urlIn finds what reads as a URL in a string: a scheme, "://", and what
// follows up to a space or a quote. A string may hold several (a prompt, a
// JSON body), so each is checked.
var urlIn = regexp.MustCompile(`(?i)[a-z][a-z0-9+.-]*://[^\s"'<>` + "`" + `]+`)

// urlHostEntry checks a url_hosts entry and returns it as compared: lower
// case, no trailing dot. An entry is a host name, an address, or
// *.example.com (any name below example.com, not example.com itself).
func urlHostEntry(h string) (string, error) {
	norm := strings.TrimSuffix(strings.ToLower(h), ".")
	rest := strings.TrimPrefix(norm, "*.")
	switch {
	case rest == "" || strings.ContainsAny(rest, "*/:@ \t") && !strings.HasPrefix(rest, "["):
		return "", fmt.Errorf("url_hosts %q is not a host name: write api.example.com or *.example.com, without a scheme, port or path", h)
	case strings.HasPrefix(norm, "*.") && !strings.Contains(rest, "."):
		return "", fmt.Errorf("url_hosts %q: a wildcard must leave at least two labels (*.example.com)", h)
	}
	return norm, nil
}

// foreignURL says why the argument value v is denied for a URL whose host
// is not in url_hosts, or "".
func (r *rule) foreignURL(v string) string {
	for _, raw := range urlIn.FindAllString(v, -1) {
		u, err := url.Parse(raw)
		if err != nil {
			// A URL that does not parse cannot be shown to be allowed.
			return fmt.Sprintf("holds %q, which is not a URL that can be checked", r.quote(raw))
		}
		host := strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
		if !r.allowsURLHost(host) {
			return fmt.Sprintf("holds a URL to %q, which url_hosts does not list", r.quote(host))
		}
	}
	return ""
}

func (r *rule) allowsURLHost(host string) bool {
	if host == "" {
		return false
	}
	for _, h := range r.urlHosts {
		if suffix, ok := strings.CutPrefix(h, "*"); ok {
			if strings.HasSuffix(host, suffix) && len(host) > len(suffix) {
				return true
			}
		} else if host == strings.Trim(h, "[]") {
			return true
		}
	}
	return false
}
