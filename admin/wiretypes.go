package admin

import (
	"strings"

	"github.com/plugkit-go/plugkit/host"
	"github.com/plugkit-go/plugkit/sandbox"
)

// The admin API's JSON has its own types, so that changing a struct inside
// the host does not silently change the protocol; the functions below
// copy the host's values into them.

// Sandbox says how a plugin's process is confined.
type Sandbox struct {
	// State is "enforced", "partial" or "off".
	State string `json:"state"`
	// Gaps says what is not enforced when State is "partial".
	Gaps []Gap `json:"gaps,omitempty"`
	// Limits says how each declared limit is enforced, one line each
	// ("memory 256MiB: cgroup v1 memory.limit_in_bytes").
	Limits []string `json:"limits,omitempty"`
	// Egress says what enforces an egress plugin's allow-list ("proxy in
	// netns", or the weaker Landlock port rule).
	Egress string `json:"egress,omitempty"`
}

// Gap is a part of a sandbox that is not enforced, and why.
type Gap struct {
	Part string `json:"part"`
	Why  string `json:"why"`
}

func (g Gap) String() string { return g.Part + ": " + g.Why }

func (s Sandbox) String() string {
	if s.State != sandbox.StatePartial {
		return s.State
	}
	parts := make([]string, len(s.Gaps))
	for i, g := range s.Gaps {
		parts[i] = g.Part
	}
	return "partial (" + strings.Join(parts, ", ") + " not enforced)"
}

// Question is an approval question, streamed to the client that made the
// call (CallEvent).
type Question struct {
	ID        string `json:"id"`
	Tool      string `json:"tool"`
	Arguments string `json:"arguments"`
	Question  string `json:"question"`
	// For is who the call is made for ("local:alice", "user:ann").
	For string `json:"for"`
}

func sandboxOf(e sandbox.Enforcement) Sandbox {
	s := Sandbox{State: e.State, Limits: e.Limits, Egress: e.Egress}
	if e.Gaps != nil {
		s.Gaps = make([]Gap, len(e.Gaps))
		for i, g := range e.Gaps {
			s.Gaps[i] = Gap{Part: string(g.Part), Why: g.Why}
		}
	}
	return s
}

func questionOf(q host.Question) Question {
	return Question{ID: q.ID, Tool: q.Tool, Arguments: q.Arguments, Question: q.Question, For: q.For}
}
