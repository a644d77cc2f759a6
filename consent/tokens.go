package consent

import (
	"context"
	"strings"

	"github.com/plugkit-go/plugkit/vault"
)

// matches reports whether the record of principal ("kind:id") is one that
// who names: "kind:id" exactly, or an id alone of any kind.
func matches(principal, who string) bool {
	if who == "" || principal == who {
		return true
	}
	if strings.Contains(who, ":") {
		return false
	}
	_, id, _ := strings.Cut(principal, ":")
	return id == who
}

// List is the records of the principals who names ("" for all), for plugin
// ("" for every plugin), without their tokens.
func (m *Manager) List(ctx context.Context, who, plugin string) ([]vault.Entry, error) {
	all, err := m.vault.List(ctx, "")
	if err != nil {
		return nil, err
	}
	out := []vault.Entry{}
	for _, e := range all {
		if matches(e.Principal, who) && (plugin == "" || e.Plugin == plugin) {
			out = append(out, e)
		}
	}
	return out, nil
}

// Revoke drops the tokens of the principals who names for plugin ("" for
// every plugin): their next call asks for consent again. It returns what
// it dropped.
func (m *Manager) Revoke(ctx context.Context, who, plugin string) ([]vault.Entry, error) {
	list, err := m.List(ctx, who, plugin)
	if err != nil {
		return nil, err
	}
	for i, e := range list {
		if err := m.vault.Delete(ctx, e.Principal, e.Plugin); err != nil {
			return list[:i], err
		}
	}
	return list, nil
}
