package kernel

import "fmt"

// Restart ends a plugin's scope back to PENDING, undoing its effects, and
// loads it again when it can (its apply step runs anew). cause is kept as
// the scope's last error. A plugin that is loading is sent back once its
// apply returns. Supervisors use it when a plugin's process dies.
func (k *Kernel) Restart(name string, cause error) error {
	k.life.Lock()
	defer k.life.Unlock()
	s, ok := k.scopes[name]
	if !ok {
		return fmt.Errorf("restart %s: no such plugin", name)
	}
	k.restartLocked(s, cause)
	return nil
}

func (k *Kernel) restartLocked(s *Scope, cause error) {
	s.mu.Lock()
	st := s.state
	if st == Loading {
		s.stale = true
		if s.cancel != nil {
			s.cancel()
		}
	}
	s.mu.Unlock()
	if st != Loading {
		k.endLocked(s, Pending, cause)
	}
	k.reconcileLocked()
}
