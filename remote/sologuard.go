package remote

import (
	"context"
	"time"

	"github.com/plugkit-go/plugkit/pipeline"
	"github.com/plugkit-go/plugkit/shared/pb"
)

// A critical plugin's guards (stage 2) are retried alone as its pre-execute
// filters are (solo.go): a guard is found again in the next process by its
// slot, its place among the guards the process added, and its name.

// addGuard records a guard the process added and returns its slot.
func (in *instance) addGuard(name, handler string) int {
	in.preMu.Lock()
	defer in.preMu.Unlock()
	in.guards = append(in.guards, preFilter{name: name, handler: handler})
	return len(in.guards) - 1
}

func (in *instance) guardAt(slot int) (preFilter, bool) {
	in.preMu.Lock()
	defer in.preMu.Unlock()
	if slot < 0 || slot >= len(in.guards) {
		return preFilter{}, false
	}
	return in.guards[slot], true
}

// retryGuard asks the guard in slot again alone (retryAlone) for e, whose
// call was in it when the process dead died.
func (mp *managed) retryGuard(ctx context.Context, dead *instance, slot int, e *pipeline.Execution) (*pb.GuardResponse, error) {
	want, _ := dead.guardAt(slot)
	a := aloneAsk{kind: "guard", name: "guard"}
	if want.name != "" {
		a.name += " " + want.name
	}
	a.same = func(in *instance) bool {
		g, ok := in.guardAt(slot)
		return ok && g.name == want.name
	}
	var resp *pb.GuardResponse
	a.ask = func(ctx context.Context, in *instance) error {
		g, _ := in.guardAt(slot)
		x, seen := in.execution(e)
		start := time.Now()
		r, err := in.calls.startGuard(ctx, &pb.GuardRequest{HandlerId: g.handler, Execution: x})()
		in.timed("guard", start)
		if err == nil {
			seen()
			resp = r
		}
		return err
	}
	if err := mp.retryAlone(ctx, dead, e, a); err != nil {
		return nil, err
	}
	return resp, nil
}
