package tokenexchange

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"
)

// RFC 8693 names.
const (
	GrantTokenExchange = "urn:ietf:params:oauth:grant-type:token-exchange"
	TokenTypeAccess    = "urn:ietf:params:oauth:token-type:access_token"
)

// maxAnswerBytes bounds a token endpoint's answer.
const maxAnswerBytes = 1 << 16

// exchange asks u's token endpoint for a token of u's audience in exchange
// for subject (RFC 8693 §2.1), as a form POST with the client's
// credentials in HTTP Basic.
func (b *Broker) exchange(ctx context.Context, u *Upstream, subject string) (string, time.Duration, error) {
	form := url.Values{
		"grant_type":           {GrantTokenExchange},
		"subject_token":        {subject},
		"subject_token_type":   {TokenTypeAccess},
		"requested_token_type": {TokenTypeAccess},
	}
	if u.Audience != "" {
		form.Set("audience", u.Audience)
	}
	if u.Scope != "" {
		form.Set("scope", u.Scope)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.TokenURL, strings.NewReader(form.Encode()))
	if err != nil {
		return "", 0, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	if u.ClientID != "" {
		req.SetBasicAuth(url.QueryEscape(u.ClientID), url.QueryEscape(u.ClientSecret))
	}
	resp, err := b.client.Do(req)
	if err != nil {
		return "", 0, fmt.Errorf("token endpoint %s: %w", u.TokenURL, scrub(err))
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes+1))
	if err != nil {
		return "", 0, fmt.Errorf("token endpoint %s: reading the answer: %w", u.TokenURL, err)
	}
	if len(body) > maxAnswerBytes {
		return "", 0, fmt.Errorf("token endpoint %s: answer larger than %d bytes", u.TokenURL, maxAnswerBytes)
	}
	var ans struct {
		AccessToken     string `json:"access_token"`
		IssuedTokenType string `json:"issued_token_type"`
		TokenType       string `json:"token_type"`
		ExpiresIn       int64  `json:"expires_in"`
		Error           string `json:"error"`
		Description     string `json:"error_description"`
	}
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	jsonErr := json.Unmarshal(body, &ans)
	if resp.StatusCode != http.StatusOK {
		if mt == "application/json" && jsonErr == nil && ans.Error != "" {
			return "", 0, fmt.Errorf("token endpoint %s refused the exchange: %s", u.TokenURL, oauthError(ans.Error, ans.Description))
		}
		return "", 0, fmt.Errorf("token endpoint %s answered %s", u.TokenURL, resp.Status)
	}
	if jsonErr != nil {
		return "", 0, fmt.Errorf("token endpoint %s: the answer is not JSON: %v", u.TokenURL, jsonErr)
	}
	if ans.AccessToken == "" {
		return "", 0, fmt.Errorf("token endpoint %s: the answer has no access_token", u.TokenURL)
	}
	if ans.IssuedTokenType != "" && ans.IssuedTokenType != TokenTypeAccess {
		return "", 0, fmt.Errorf("token endpoint %s issued a %s, not an access token", u.TokenURL, ans.IssuedTokenType)
	}
	return ans.AccessToken, time.Duration(ans.ExpiresIn) * time.Second, nil
}

// clientCredentials asks u's token endpoint for the gateway's own token.
func (b *Broker) clientCredentials(ctx context.Context, u *Upstream) (string, time.Duration, error) {
	cfg := clientcredentials.Config{
		ClientID:     u.ClientID,
		ClientSecret: u.ClientSecret,
		TokenURL:     u.TokenURL,
		Scopes:       strings.Fields(u.Scope),
		AuthStyle:    oauth2.AuthStyleInHeader,
	}
	if u.Audience != "" {
		cfg.EndpointParams = url.Values{"audience": {u.Audience}}
	}
	tok, err := cfg.Token(context.WithValue(ctx, oauth2.HTTPClient, b.client))
	if err != nil {
		var re *oauth2.RetrieveError
		if errors.As(err, &re) {
			if re.ErrorCode != "" {
				return "", 0, fmt.Errorf("token endpoint %s refused client credentials: %s", u.TokenURL, oauthError(re.ErrorCode, re.ErrorDescription))
			}
			return "", 0, fmt.Errorf("token endpoint %s answered %s", u.TokenURL, re.Response.Status)
		}
		return "", 0, fmt.Errorf("token endpoint %s: %w", u.TokenURL, scrub(err))
	}
	var life time.Duration
	if !tok.Expiry.IsZero() {
		life = time.Until(tok.Expiry)
	}
	return tok.AccessToken, life, nil
}

// oauthError is an OAuth error answer, its description cut short.
func oauthError(code, desc string) string {
	const most = 200
	if len(desc) > most {
		desc = desc[:most] + "…"
	}
	if desc == "" {
		return code
	}
	return code + ": " + desc
}

// scrub drops a url.Error's URL, which names the endpoint already.
func scrub(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}
