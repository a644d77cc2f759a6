package main

import (
	"strings"
	"testing"
)

// TestURLHosts: a rule with url_hosts denies a call whose arguments carry
// a URL to any other host, wherever the URL sits in them.
func TestURLHosts(t *testing.T) {
	pol := mustCompile(t, Config{Deny: []Rule{{Name: "fetch-only-github", Tools: []string{"fetch"},
		URLHosts: []string{"api.github.com", "*.githubusercontent.com", "[::1]"}}}})
	for args, want := range map[string]string{
		`{"url":"https://api.github.com/repos/x"}`:                                     "",
		`{"url":"https://API.GitHub.com./repos/x"}`:                                    "",
		`{"url":"https://raw.githubusercontent.com/x/y"}`:                              "",
		`{"url":"http://[::1]:8080/"}`:                                                 "",
		`{"note":"no URL here, just api.github.com"}`:                                  "",
		`{"url":"http://169.254.169.254/latest/meta-data/"}`:                           `url holds a URL to "169.254.169.254"`,
		`{"url":"https://githubusercontent.com/x"}`:                                    `to "githubusercontent.com"`,
		`{"url":"https://api.github.com@evil.example/"}`:                               `to "evil.example"`,
		`{"body":{"items":["see https://api.github.com/a and ftp://evil.example/x"]}}`: `body/items/0 holds a URL to "evil.example"`,
		`{"url":"HTTPS://EVIL.example/"}`:                                              `to "evil.example"`,
		`{"url":"file:///etc/passwd"}`:                                                 `to ""`,
	} {
		got := firstDenial(t, pol, call("fetch", args))
		switch {
		case want == "" && got != "":
			t.Errorf("%s: denied: %s", args, got)
		case want != "" && !strings.Contains(got, want):
			t.Errorf("%s: got %q, want it to say %q", args, got, want)
		}
	}
	if got := firstDenial(t, pol, call("other", `{"url":"https://evil.example/"}`)); got != "" {
		t.Errorf("a tool the rule does not name: %s", got)
	}
	// url_hosts = [] denies every URL; arguments limits where it looks.
	pol = mustCompile(t, Config{Deny: []Rule{{Name: "no-urls", URLHosts: []string{}, Arguments: []string{"url"}}}})
	if got := firstDenial(t, pol, call("fetch", `{"url":"https://api.github.com/"}`)); !strings.Contains(got, `denied by safety rule "no-urls"`) {
		t.Errorf("url_hosts = []: %q", got)
	}
	if got := firstDenial(t, pol, call("fetch", `{"other":"https://api.github.com/"}`)); got != "" {
		t.Errorf("an argument not inspected: %q", got)
	}
}

func TestURLHostsRefused(t *testing.T) {
	for _, h := range []string{"https://api.github.com", "api.github.com:443", "*.com", "a*.example.com", "api.github.com/x", ""} {
		_, err := compile(Config{Deny: []Rule{{Name: "r", URLHosts: []string{h}}}})
		if err == nil || !strings.Contains(err.Error(), `deny "r": url_hosts`) {
			t.Errorf("url_hosts %q: %v", h, err)
		}
	}
}
