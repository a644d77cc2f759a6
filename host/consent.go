package host

import (
	"fmt"

	"github.com/hashicorp/go-hclog"

	"github.com/plugkit-go/plugkit/consent"
	"github.com/plugkit-go/plugkit/deployment"
	"github.com/plugkit-go/plugkit/vault"
)

// logConsents logs how each consent that came back ended, naming the call
// that asked for it (never a token).
func logConsents(m *consent.Manager, log hclog.Logger) {
	m.OnEnded = func(principal, plugin, call, why string) {
		if why == "" {
			log.Info("consent given: token kept", "principal", principal, "plugin", plugin, "call", call)
			return
		}
		log.Warn("consent not completed", "principal", principal, "plugin", plugin, "call", call, "why", why)
	}
}

// newConsent is the consent manager of the host block's user_consent
// block: its vault (a file, or Redis shared by replicas) opened with the
// key file; nil without the block.
func newConsent(uc *deployment.UserConsent) (*consent.Manager, error) {
	if uc == nil {
		return nil, nil
	}
	var store vault.Store
	if uc.Store != "" {
		s, err := vault.NewRedisStore(uc.Store)
		if err != nil {
			return nil, err
		}
		store = s
	} else {
		store = vault.NewFileStore(uc.Vault)
	}
	v, err := vault.Open(uc.KeyFile, store)
	if err != nil {
		store.Close()
		return nil, fmt.Errorf("user_consent: %w", err)
	}
	m := consent.New(v, uc.URL, nil)
	m.SetWait(uc.Wait)
	return m, nil
}

// Consent is the host's consent manager (its callback handler and its
// vault); nil without a user_consent block.
func (h *Host) Consent() *consent.Manager { return h.consent }
