package kernel

import "slices"

// ScopeInfo describes one plugin scope, for the CLI and the admin API.
type ScopeInfo struct {
	Name     string
	State    State
	Provides []string
	Injects  []string
	// Waiting lists the injected services that are not provided yet.
	Waiting []string
	// Effects names what the scope has registered, oldest first.
	Effects   []string
	LastError string
}

// Describe returns every plugin scope in load order.
func (k *Kernel) Describe() []ScopeInfo {
	k.reg.Lock()
	scopes := slices.Clone(k.order)
	k.reg.Unlock()
	out := make([]ScopeInfo, 0, len(scopes))
	for _, s := range scopes {
		out = append(out, k.describe(s))
	}
	return out
}

func (k *Kernel) describe(s *Scope) ScopeInfo {
	s.mu.Lock()
	info := ScopeInfo{
		Name:     s.plugin.Name,
		State:    s.state,
		Provides: slices.Clone(s.provides),
		Injects:  slices.Clone(s.plugin.Inject),
		Effects:  make([]string, 0, len(s.effects)),
	}
	for _, e := range s.effects {
		info.Effects = append(info.Effects, e.desc)
	}
	if s.lastErr != nil {
		info.LastError = s.lastErr.Error()
	}
	s.mu.Unlock()
	for _, name := range info.Injects {
		if _, ok := k.service(name); !ok {
			info.Waiting = append(info.Waiting, name)
		}
	}
	return info
}
