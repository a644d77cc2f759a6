package tokenexchange

import (
	"context"
	"errors"
	"testing"
)

type askErr struct{}

func (askErr) Error() string      { return "open https://as.example/authorize?… then call again" }
func (askErr) ConsentURL() string { return "https://as.example/authorize?…" }

type fakeConsent struct{ err error }

func (f fakeConsent) Token(context.Context, *Upstream, string) (string, error) {
	if f.err != nil {
		return "", f.err
	}
	return "tok", nil
}

// A user_consent upstream's outcomes: a kept token is cached, a consent
// to give is consent_needed, another failure failed; without a consent
// source the call fails.
func TestUserConsentOutcomes(t *testing.T) {
	u := &Upstream{Plugin: "tracker", URL: "https://up.example/mcp", Mode: UserConsent}
	var got []Outcome
	b := New(nil)
	b.OnOutcome = func(_ string, o Outcome) { got = append(got, o) }
	if _, err := b.Token(context.Background(), u, "user:alice"); err == nil {
		t.Error("no consent source: no error")
	}
	for _, f := range []fakeConsent{{}, {askErr{}}, {errors.New("vault unreadable")}} {
		b.Consent = f
		tok, err := b.Token(context.Background(), u, "user:alice")
		if (f.err == nil) != (err == nil) || (err == nil && tok != "tok") {
			t.Errorf("consent %v: %q %v", f.err, tok, err)
		}
	}
	want := []Outcome{Failed, Cached, ConsentNeeded, Failed}
	if len(got) != len(want) {
		t.Fatalf("outcomes %v; want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("outcomes %v; want %v", got, want)
		}
	}
}
