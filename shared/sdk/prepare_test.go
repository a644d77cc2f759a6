package sdk

import (
	"context"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/plugkit-go/plugkit/shared/pb"
)

// TestPrepare: Prepare gets the config the host sends with Describe, only
// when it sends one; Apply runs once Prepare has returned; Stop runs after
// a Prepare that was cut short by the shutdown.
func TestPrepare(t *testing.T) {
	type prepared struct {
		cfg greeterConfig
		at  time.Time
	}
	build := func(t *testing.T, release <-chan struct{}, got chan<- prepared, applied chan<- time.Time, stopped chan<- bool) *harness {
		def, err := Plugin[greeterConfig]{
			Name: "p",
			Prepare: func(ctx context.Context, _ hclog.Logger, cfg greeterConfig) {
				select {
				case <-release:
				case <-ctx.Done():
				}
				got <- prepared{cfg, time.Now()}
			},
			Apply: func(context.Context, *Context, greeterConfig) error { applied <- time.Now(); return nil },
			Stop:  func(context.Context) error { stopped <- true; return nil },
		}.build()
		if err != nil {
			t.Fatal(err)
		}
		return newHarness(t, def, harnessOptions{})
	}

	t.Run("runs with the config and Apply waits for it", func(t *testing.T) {
		release, got, applied, stopped := make(chan struct{}), make(chan prepared, 1), make(chan time.Time, 1), make(chan bool, 1)
		h := build(t, release, got, applied, stopped)
		ctx := testCtx(t)
		cfg := `{"greeting":"hi","times":3}`
		if _, err := h.plugin.Describe(ctx, &pb.DescribeRequest{PrepareConfigJson: []byte(cfg)}); err != nil {
			t.Fatal(err)
		}
		applyDone := make(chan error, 1)
		go func() {
			resp, err := h.plugin.Apply(ctx, &pb.ApplyRequest{ConfigJson: []byte(cfg), HostBrokerId: testBrokerID})
			if err == nil && resp.GetError() != "" {
				err = errorString(resp.GetError())
			}
			applyDone <- err
		}()
		select {
		case <-applied:
			t.Fatal("Apply ran before Prepare returned")
		case <-time.After(50 * time.Millisecond):
		}
		close(release)
		p := <-got
		if err := <-applyDone; err != nil {
			t.Fatal(err)
		}
		at := <-applied
		if p.cfg != (greeterConfig{Greeting: "hi", Times: 3}) {
			t.Errorf("Prepare got %+v", p.cfg)
		}
		if at.Before(p.at) {
			t.Error("Apply ran before Prepare returned")
		}
	})

	t.Run("not run when the host only asks", func(t *testing.T) {
		release, got, applied, stopped := make(chan struct{}), make(chan prepared, 1), make(chan time.Time, 1), make(chan bool, 1)
		close(release)
		h := build(t, release, got, applied, stopped)
		ctx := testCtx(t)
		if _, err := h.plugin.Describe(ctx, &pb.DescribeRequest{}); err != nil {
			t.Fatal(err)
		}
		if _, err := h.plugin.Apply(ctx, &pb.ApplyRequest{ConfigJson: []byte(`{"greeting":"x"}`), HostBrokerId: testBrokerID}); err != nil {
			t.Fatal(err)
		}
		<-applied
		select {
		case p := <-got:
			t.Errorf("Prepare ran with %+v", p.cfg)
		default:
		}
	})

	t.Run("shutdown ends it before Stop", func(t *testing.T) {
		release, got, applied, stopped := make(chan struct{}), make(chan prepared, 1), make(chan time.Time, 1), make(chan bool, 1)
		h := build(t, release, got, applied, stopped)
		ctx := testCtx(t)
		if _, err := h.plugin.Describe(ctx, &pb.DescribeRequest{PrepareConfigJson: []byte(`{"greeting":"hi"}`)}); err != nil {
			t.Fatal(err)
		}
		if _, err := h.plugin.Shutdown(ctx, &pb.ShutdownRequest{}); err != nil {
			t.Fatal(err)
		}
		select {
		case <-got:
		default:
			t.Fatal("Shutdown returned while Prepare still ran")
		}
		if !<-stopped {
			t.Fatal("Stop did not run")
		}
	})
}
