package authn_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/golang-jwt/jwt/v5"

	"github.com/plugkit-go/plugkit/authn"
	"github.com/plugkit-go/plugkit/internal/testkit/testissuer"
)

// The OAuth token Verify checked is kept for the host to exchange, and
// prints as nothing.
func TestSubjectTokenKeptAndRedacted(t *testing.T) {
	iss := testissuer.Start(t)
	const audience = "https://tools.example/mcp"
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a, err := authn.New(ctx, authn.Config{OAuth: &authn.OAuthConfig{Issuer: iss.URL, JWKSURL: iss.JWKSURL, Audience: audience}})
	if err != nil {
		t.Fatal(err)
	}
	tok := iss.Token(t, jwt.MapClaims{"sub": "alice", "aud": audience})
	ti, err := a.Verify(ctx, tok, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := authn.SubjectTokenOf(ti); got != tok {
		t.Fatalf("SubjectTokenOf = %q; want the verified token", got)
	}
	j, _ := json.Marshal(ti)
	printed := fmt.Sprintf("%v %+v %#v %s", ti, ti, ti.Extra, j)
	if strings.Contains(printed, tok) {
		t.Errorf("the token info prints the token: %s", printed)
	}
	if authn.SubjectTokenOf(nil) != "" {
		t.Error("no token info has a subject token")
	}
}
