package host

import (
	"fmt"
	"strings"

	"github.com/plugkit-go/plugkit/kernel"
)

// Ready says why the host should not be sent new work, or nil when it may
// be: it is not draining, and every critical plugin is ACTIVE (while one is
// not, every call is denied, so a load balancer does better to send them
// elsewhere). What the host serves besides (its MCP listener) is for its
// caller to add.
func (h *Host) Ready() error {
	if h.Draining() {
		return fmt.Errorf("draining: %s", DrainingMessage)
	}
	states := map[string]kernel.State{}
	for _, p := range h.Status() {
		states[p.Name] = p.State
	}
	var down []string
	for _, p := range h.deployment().Plugins {
		if !p.Critical {
			continue
		}
		if st, ok := states[p.Name]; !ok {
			down = append(down, p.Name+" is not started")
		} else if st != kernel.Active {
			down = append(down, fmt.Sprintf("%s is %s", p.Name, st))
		}
	}
	if len(down) > 0 {
		return fmt.Errorf("critical plugins not active: %s", strings.Join(down, ", "))
	}
	return nil
}
