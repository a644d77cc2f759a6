package authn

import "github.com/plugkit-go/plugkit/shared/identity"

// Named returns the principal of the key called name, as a request that
// presents that key is made for (`host tools --as key:NAME`).
func (k *Keys) Named(name string) (identity.Principal, bool) {
	for _, e := range k.entries {
		if e.principal.ID == name {
			return e.principal, true
		}
	}
	return identity.Principal{}, false
}
