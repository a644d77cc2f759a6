package sdk

import (
	"context"
	"fmt"
	"sync"

	"github.com/plugkit-go/plugkit/shared/pb"
)

// Handle is one registration the plugin made. Dispose undoes it; the host
// also undoes every registration when the plugin unloads, so a plugin only
// disposes what it wants gone while it keeps running.
type Handle struct {
	srv  *server
	id   string
	gen  uint64
	drop func()

	mu       sync.Mutex
	disposed bool
}

func newHandle(s *server, regID string, drop func()) *Handle {
	return &Handle{srv: s, id: regID, gen: s.generation.Load(), drop: drop}
}

// ID is the host's registration id.
func (h *Handle) ID() string { return h.id }

// Dispose asks the host to undo the registration, then forgets the handler.
// Disposing twice, or a handle from before the host re-applied the plugin,
// does nothing. If the host cannot be reached the handler stays, since the
// host may still route calls to it, and Dispose may be tried again.
func (h *Handle) Dispose(ctx context.Context) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.disposed {
		return nil
	}
	if h.srv.generation.Load() != h.gen {
		h.disposed = true
		return nil
	}
	host, err := h.srv.hostClient()
	if err != nil {
		return err
	}
	if _, err := host.Dispose(ctx, &pb.DisposeRequest{RegistrationId: h.id}); err != nil {
		return fmt.Errorf("dispose %s: %w", h.id, hostError(ctx, err))
	}
	h.disposed = true
	if h.drop != nil {
		h.drop()
	}
	return nil
}
