package consent

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
)

// clientMetadata is the host's client description: its client ID metadata
// document, and the body of a dynamic registration.
func (m *Manager) clientMetadata(clientID string) map[string]any {
	doc := map[string]any{
		"client_name":                "plugkit",
		"redirect_uris":              []string{m.base + CallbackPath},
		"grant_types":                []string{"authorization_code", "refresh_token"},
		"response_types":             []string{"code"},
		"token_endpoint_auth_method": "none",
	}
	if clientID != "" {
		doc["client_id"] = clientID
	}
	return doc
}

// register registers the host as a public client (RFC 7591).
func (m *Manager) register(ctx context.Context, srv *server) (string, error) {
	if err := checkURL(srv.registerURL); err != nil {
		return "", fmt.Errorf("registration endpoint %q %v", srv.registerURL, err)
	}
	body, _ := json.Marshal(m.clientMetadata(""))
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, srv.registerURL, bytes.NewReader(body))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := m.client.Do(req)
	if err != nil {
		return "", fmt.Errorf("registration at %s: %w", srv.registerURL, scrub(err))
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, maxMetadataBytes))
	var ans struct {
		ClientID string `json:"client_id"`
	}
	if resp.StatusCode != http.StatusCreated && resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("registration at %s answered %s", srv.registerURL, resp.Status)
	}
	if json.Unmarshal(raw, &ans) != nil || ans.ClientID == "" {
		return "", fmt.Errorf("registration at %s: the answer has no client_id", srv.registerURL)
	}
	return ans.ClientID, nil
}
