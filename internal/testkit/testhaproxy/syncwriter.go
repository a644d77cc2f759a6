package testhaproxy

import (
	"strings"
	"sync"
)

// syncWriter collects haproxy's output while the test reads it.
type syncWriter struct {
	mu sync.Mutex
	b  *strings.Builder
}

func (w *syncWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}
