package admin

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/plugkit-go/plugkit/host"
	"github.com/plugkit-go/plugkit/sandbox"
)

// The admin API's own types encode as the host's values did when the API
// embedded them: the same bytes on the wire for the same values.

func TestSandboxEncodesAsEnforcement(t *testing.T) {
	t.Parallel()
	for _, e := range []sandbox.Enforcement{
		sandbox.Off,
		{State: sandbox.StateEnforced, Limits: []string{"memory 256MiB: cgroup v2 memory.max", "processes 64: cgroup v2 pids.max"}},
		{State: sandbox.StatePartial, Gaps: []sandbox.Gap{{Part: "network", Why: "no network namespaces"}, {Part: "memory", Why: "no cgroup"}},
			Limits: []string{"open files 256: RLIMIT_NOFILE"}},
		{State: sandbox.StatePartial, Gaps: []sandbox.Gap{}, Limits: []string{}},
		{State: sandbox.StateEnforced, Egress: sandbox.EgressNetNS},
	} {
		want, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		s := sandboxOf(e)
		got, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("sandbox encodes as\n%s\nthe host's enforcement as\n%s", got, want)
		}
		if s.String() != e.String() {
			t.Errorf("sandbox prints %q, the host's enforcement %q", s, e)
		}
		for i, g := range s.Gaps {
			if g.String() != e.Gaps[i].String() {
				t.Errorf("gap prints %q, the host's %q", g, e.Gaps[i])
			}
		}
	}
}

func TestQuestionEncodesAsHosts(t *testing.T) {
	t.Parallel()
	for _, q := range []host.Question{
		{ID: "q-7", Tool: "deploy", Arguments: `{"repo":"web","note":"<&>\u2028"}`, Question: "Deploy web?", For: "local:ann"},
		{}, // every field empty: none may be left out
	} {
		// As the call's stream carried it before: a CallEvent holding the
		// host's own Question.
		want, err := json.Marshal(struct {
			Question  *host.Question `json:"question,omitempty"`
			AnswerKey string         `json:"answer_key,omitempty"`
			Result    *Result        `json:"result,omitempty"`
		}{Question: &q, AnswerKey: "k"})
		if err != nil {
			t.Fatal(err)
		}
		aq := questionOf(q)
		got, err := json.Marshal(CallEvent{Question: &aq, AnswerKey: "k"})
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("question event encodes as\n%s\nit was\n%s", got, want)
		}
	}
}
