package consent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// server is what discovery learnt of an upstream's authorization server,
// and the client the host is there.
type server struct {
	resource     string // RFC 8707 resource, from the upstream's metadata
	issuer       string
	authURL      string
	tokenURL     string
	registerURL  string
	revokeURL    string
	cimd         bool
	scope        string // the 401's scope, when the deployment names none
	clientID     string
	clientSecret string
}

// maxMetadataBytes bounds a metadata document.
const maxMetadataBytes = 1 << 16

// discover finds u's authorization server: the resource_metadata of the
// 401 an unauthenticated request gets (RFC 9728 §5.1), else the
// well-known addresses (§3.1); then the server's metadata (RFC 8414 §3,
// else OpenID discovery).
func (m *Manager) discover(ctx context.Context, upstream string) (*server, error) {
	metaURL, scope, err := m.probe(ctx, upstream)
	if err != nil {
		return nil, err
	}
	var candidates []string
	if metaURL != "" {
		candidates = []string{metaURL}
	} else {
		candidates = wellKnown(upstream, "oauth-protected-resource")
	}
	var prm struct {
		Resource             string   `json:"resource"`
		AuthorizationServers []string `json:"authorization_servers"`
	}
	if err := m.firstJSON(ctx, candidates, &prm); err != nil {
		return nil, fmt.Errorf("protected resource metadata of %s: %w", upstream, err)
	}
	if prm.Resource == "" || len(prm.AuthorizationServers) == 0 {
		return nil, fmt.Errorf("protected resource metadata of %s names no resource or no authorization server", upstream)
	}
	if !sameResource(prm.Resource, upstream) {
		// RFC 9728 §3.3: metadata for another resource is not this one's.
		return nil, fmt.Errorf("protected resource metadata of %s is for %s", upstream, prm.Resource)
	}
	issuer := prm.AuthorizationServers[0]
	if err := checkURL(issuer); err != nil {
		return nil, fmt.Errorf("authorization server %q of %s %v", issuer, upstream, err)
	}
	var asm struct {
		Issuer                string   `json:"issuer"`
		AuthorizationEndpoint string   `json:"authorization_endpoint"`
		TokenEndpoint         string   `json:"token_endpoint"`
		RegistrationEndpoint  string   `json:"registration_endpoint"`
		RevocationEndpoint    string   `json:"revocation_endpoint"`
		CodeChallengeMethods  []string `json:"code_challenge_methods_supported"`
		CIMD                  bool     `json:"client_id_metadata_document_supported"`
	}
	as := append(wellKnown(issuer, "oauth-authorization-server"), wellKnown(issuer, "openid-configuration")...)
	if err := m.firstJSON(ctx, as, &asm); err != nil {
		return nil, fmt.Errorf("authorization server metadata of %s: %w", issuer, err)
	}
	if strings.TrimSuffix(asm.Issuer, "/") != strings.TrimSuffix(issuer, "/") {
		// RFC 8414 §3.3: a mismatch is an attack or a mistake.
		return nil, fmt.Errorf("authorization server metadata of %s names the issuer %q", issuer, asm.Issuer)
	}
	if !contains(asm.CodeChallengeMethods, "S256") {
		return nil, fmt.Errorf("authorization server %s does not offer PKCE with S256", issuer)
	}
	for _, e := range []string{asm.AuthorizationEndpoint, asm.TokenEndpoint} {
		if err := checkURL(e); err != nil {
			return nil, fmt.Errorf("authorization server %s: endpoint %q %v", issuer, e, err)
		}
	}
	srv := &server{resource: prm.Resource, issuer: asm.Issuer, authURL: asm.AuthorizationEndpoint, tokenURL: asm.TokenEndpoint,
		registerURL: asm.RegistrationEndpoint, cimd: asm.CIMD, scope: scope}
	if checkURL(asm.RevocationEndpoint) == nil {
		srv.revokeURL = asm.RevocationEndpoint
	}
	return srv, nil
}

// probe sends an unauthenticated MCP initialize to upstream; a 401's
// WWW-Authenticate names the metadata (and perhaps the scope).
func (m *Manager) probe(ctx context.Context, upstream string) (metaURL, scope string, err error) {
	body := `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"plugkit","version":"consent-probe"}}}`
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, upstream, strings.NewReader(body))
	if err != nil {
		return "", "", fmt.Errorf("upstream %s: %w", upstream, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := m.client.Do(req)
	if err != nil {
		return "", "", fmt.Errorf("upstream %s: %w", upstream, scrub(err))
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxMetadataBytes))
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		if id := resp.Header.Get("Mcp-Session-Id"); id != "" {
			// The probe opened a session: end it, not to leave it behind.
			if del, err := http.NewRequestWithContext(ctx, http.MethodDelete, upstream, nil); err == nil {
				del.Header.Set("Mcp-Session-Id", id)
				if r, err := m.client.Do(del); err == nil {
					r.Body.Close()
				}
			}
		}
		return "", "", nil
	}
	params := bearerParams(resp.Header.Values("WWW-Authenticate"))
	if u := params["resource_metadata"]; u != "" {
		if err := checkURL(u); err != nil {
			return "", "", fmt.Errorf("upstream %s: resource_metadata %q %v", upstream, u, err)
		}
		metaURL = u
	}
	return metaURL, params["scope"], nil
}

// bearerParams are the auth-params of the Bearer challenge (RFC 6750 §3).
func bearerParams(headers []string) map[string]string {
	out := map[string]string{}
	for _, h := range headers {
		scheme, rest, _ := strings.Cut(strings.TrimSpace(h), " ")
		if !strings.EqualFold(scheme, "Bearer") {
			continue
		}
		for rest != "" {
			rest = strings.TrimLeft(rest, " ,")
			k, v, ok := strings.Cut(rest, "=")
			if !ok {
				break
			}
			k = strings.TrimSpace(k)
			v = strings.TrimLeft(v, " ")
			if strings.HasPrefix(v, `"`) {
				end := strings.Index(v[1:], `"`)
				if end < 0 {
					break
				}
				out[k], rest = v[1:1+end], v[2+end:]
			} else {
				val, r, _ := strings.Cut(v, ",")
				out[k], rest = strings.TrimSpace(val), r
			}
		}
	}
	return out
}

// wellKnown is where RFC 8615 puts name for a URL with a path (inserted
// between the host and the path), then for its origin.
func wellKnown(raw, name string) []string {
	u, err := url.Parse(raw)
	if err != nil {
		return nil
	}
	origin := u.Scheme + "://" + u.Host
	path := strings.TrimSuffix(u.EscapedPath(), "/")
	if path == "" {
		return []string{origin + "/.well-known/" + name}
	}
	return []string{origin + "/.well-known/" + name + path, origin + "/.well-known/" + name}
}

var errNotFound = errors.New("not found")

// firstJSON decodes the first of urls that answers 200 with JSON into v.
func (m *Manager) firstJSON(ctx context.Context, urls []string, v any) error {
	last := errNotFound
	for _, u := range urls {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if err != nil {
			return err
		}
		req.Header.Set("Accept", "application/json")
		resp, err := m.client.Do(req)
		if err != nil {
			return fmt.Errorf("%s: %w", u, scrub(err))
		}
		raw, err := io.ReadAll(io.LimitReader(resp.Body, maxMetadataBytes+1))
		resp.Body.Close()
		if err != nil {
			return fmt.Errorf("%s: %w", u, err)
		}
		if resp.StatusCode != http.StatusOK {
			last = fmt.Errorf("%s answered %s", u, resp.Status)
			continue
		}
		if len(raw) > maxMetadataBytes {
			return fmt.Errorf("%s: more than %d bytes", u, maxMetadataBytes)
		}
		if err := json.Unmarshal(raw, v); err != nil {
			return fmt.Errorf("%s: not JSON: %v", u, err)
		}
		return nil
	}
	return last
}

// sameResource compares two resource URLs, a trailing slash aside.
func sameResource(a, b string) bool {
	return strings.TrimSuffix(a, "/") == strings.TrimSuffix(b, "/")
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// checkURL accepts https, or http on a loopback host.
func checkURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return errors.New("is not an absolute URL")
	}
	switch u.Scheme {
	case "https":
		return nil
	case "http":
		h := u.Hostname()
		if h == "localhost" || h == "127.0.0.1" || h == "::1" {
			return nil
		}
	}
	return errors.New("is not an https URL (http is accepted on loopback only)")
}

// scrub drops a url.Error's URL, which the message names already.
func scrub(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}
