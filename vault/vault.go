package vault

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Token is one principal's token for one plugin's upstream, with what it
// takes to refresh it.
type Token struct {
	// Upstream is the upstream's URL when the token was issued: a plugin
	// whose url changed does not send it to the new one.
	Upstream     string    `json:"upstream"`
	AccessToken  string    `json:"access_token"`
	RefreshToken string    `json:"refresh_token,omitempty"`
	Expiry       time.Time `json:"expiry,omitzero"`
	Scope        string    `json:"scope,omitempty"`
	// TokenURL and ClientID are where and as whom it is refreshed.
	TokenURL string `json:"token_url"`
	ClientID string `json:"client_id"`
	// Resource is the RFC 8707 resource it was issued for.
	Resource string `json:"resource,omitempty"`
	// RevokeURL is the authorization server's RFC 7009 revocation
	// endpoint; "" when it has none.
	RevokeURL string `json:"revoke_url,omitempty"`
	// Issued is when it was stored.
	Issued time.Time `json:"issued"`
}

// String never shows a token.
func (t Token) String() string {
	return fmt.Sprintf("token for %s (expires %s)", t.Upstream, t.Expiry.Format(time.RFC3339))
}

// Entry is what List shows of a record: never a token.
type Entry struct {
	Principal string    `json:"principal"`
	Plugin    string    `json:"plugin"`
	Upstream  string    `json:"upstream"`
	Scope     string    `json:"scope,omitempty"`
	Expiry    time.Time `json:"expiry,omitzero"`
	Refresh   bool      `json:"refreshable"`
	Issued    time.Time `json:"issued"`
}

// Vault seals tokens into a Store.
type Vault struct {
	keys  keyring
	store Store
}

// Open is a vault over store with the keys of keyFile.
func Open(keyFile string, store Store) (*Vault, error) {
	keys, err := LoadKeys(keyFile)
	if err != nil {
		return nil, err
	}
	return &Vault{keys: keys, store: store}, nil
}

// recordKey is "principal\x00plugin"; a principal ("kind:id") has no NUL.
func recordKey(principal, plugin string) string { return principal + "\x00" + plugin }

// Get is principal's token for plugin; ok is false without one. A record
// that does not open is an error, not an absent token.
func (v *Vault) Get(ctx context.Context, principal, plugin string) (Token, bool, error) {
	k := recordKey(principal, plugin)
	sealed, ok, err := v.store.Get(ctx, k)
	if err != nil || !ok {
		return Token{}, false, err
	}
	plain, err := v.keys.open(sealed, []byte(k))
	if err != nil {
		return Token{}, false, fmt.Errorf("vault record of %s for %s: %w", principal, plugin, err)
	}
	var t Token
	if err := json.Unmarshal(plain, &t); err != nil {
		return Token{}, false, fmt.Errorf("vault record of %s for %s: %w", principal, plugin, err)
	}
	return t, true, nil
}

// Put stores principal's token for plugin, sealed with the first key.
func (v *Vault) Put(ctx context.Context, principal, plugin string, t Token) error {
	plain, err := json.Marshal(t)
	if err != nil {
		return err
	}
	k := recordKey(principal, plugin)
	return v.store.Put(ctx, k, v.keys.seal(plain, []byte(k)))
}

// Delete drops principal's token for plugin, if any.
func (v *Vault) Delete(ctx context.Context, principal, plugin string) error {
	return v.store.Delete(ctx, recordKey(principal, plugin))
}

// List is every record of principal ("" for all), sorted by principal then
// plugin, without the tokens. A record that does not open is listed with
// an empty upstream.
func (v *Vault) List(ctx context.Context, principal string) ([]Entry, error) {
	keys, err := v.store.Keys(ctx)
	if err != nil {
		return nil, err
	}
	var out []Entry
	for _, k := range keys {
		p, plugin, ok := strings.Cut(k, "\x00")
		if !ok || (principal != "" && p != principal) {
			continue
		}
		e := Entry{Principal: p, Plugin: plugin}
		if t, ok, err := v.Get(ctx, p, plugin); err == nil && ok {
			e.Upstream, e.Scope, e.Expiry, e.Refresh, e.Issued = t.Upstream, t.Scope, t.Expiry, t.RefreshToken != "", t.Issued
		}
		out = append(out, e)
	}
	slices.SortFunc(out, func(a, b Entry) int {
		if c := strings.Compare(a.Principal, b.Principal); c != 0 {
			return c
		}
		return strings.Compare(a.Plugin, b.Plugin)
	})
	return out, nil
}

// Close closes the store.
func (v *Vault) Close() error { return v.store.Close() }
