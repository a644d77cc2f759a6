package main

import (
	"bytes"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// syncBuffer is written by the signal goroutine while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestSignalEndsAStuckStop: after SIGTERM the command is asked to stop
// (the context ends); one that is still running when the bound has passed
// is ended, saying why, and so is one given a second signal.
func TestSignalEndsAStuckStop(t *testing.T) {
	old := exitBound.Load()
	defer exitBound.Store(old)
	for _, second := range []bool{false, true} {
		name := "bound passed"
		if second {
			name = "second signal"
		}
		t.Run(name, func(t *testing.T) {
			if second {
				exitBound.Store(int64(time.Hour)) // only the second signal can end it
			} else {
				exitBound.Store(int64(50 * time.Millisecond))
			}
			var stderr syncBuffer
			exited := make(chan int, 1)
			ctx, stop := signalContext(&stderr, func(code int) { exited <- code })
			defer stop()
			if err := syscall.Kill(syscall.Getpid(), syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			<-ctx.Done()
			// The command does not return here: its stop is stuck.
			if second {
				if err := syscall.Kill(syscall.Getpid(), syscall.SIGINT); err != nil {
					t.Fatal(err)
				}
			}
			if code := <-exited; code != exitFailed {
				t.Errorf("exit status %d, want %d", code, exitFailed)
			}
			want := "still stopping"
			if second {
				want = "again while stopping"
			}
			if !strings.Contains(stderr.String(), want) {
				t.Errorf("stderr %q does not say %q", stderr.String(), want)
			}
		})
	}
}
