package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
	"time"
)

// stopMargin is how long, past the drain, stopping the servers and the
// plugins may take (server.Run gives them 10 s) before the process ends anyway.
const stopMargin = 12 * time.Second

// exitBound is how long after SIGINT or SIGTERM the process ends whatever
// it is waiting for (a plugin that does not stop, a lock): the drain
// timeout plus stopMargin once runHost knows the drain timeout, the
// default drain timeout's until then.
var exitBound = func() *atomic.Int64 {
	var b atomic.Int64
	b.Store(int64(25*time.Second + stopMargin))
	return &b
}()

// setExitBound sets exitBound from the deployment's shutdown_timeout.
func setExitBound(drain time.Duration) { exitBound.Store(int64(drain + stopMargin)) }

// signalContext is cancelled by the first SIGINT or SIGTERM, which every
// command treats as "stop". A process still running exitBound after it, or
// given a second signal, ends there with exit status 1, saying so: a
// signal is always honoured, however a stop is stuck.
func signalContext(stderr io.Writer, exit func(int)) (context.Context, func()) {
	ctx, cancel := context.WithCancel(context.Background())
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		var first os.Signal
		select {
		case first = <-sigs:
		case <-done:
			return
		}
		cancel()
		bound := time.Duration(exitBound.Load())
		timer := time.NewTimer(bound)
		defer timer.Stop()
		select {
		case <-done:
		case s := <-sigs:
			fmt.Fprintf(stderr, "host: %v again while stopping: exiting now, without waiting for the plugins to stop\n", s)
			exit(exitFailed)
		case <-timer.C:
			fmt.Fprintf(stderr, "host: still stopping %v after the signal (%v): exiting now, without waiting for the plugins to stop (the bound is shutdown_timeout + %v)\n", bound, first, stopMargin)
			exit(exitFailed)
		}
	}()
	return ctx, func() {
		signal.Stop(sigs)
		close(done)
		cancel()
	}
}
