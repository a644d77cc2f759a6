package identity_test

import (
	"strings"
	"testing"

	"github.com/plugkit-go/plugkit/shared/identity"
)

func TestMatches(t *testing.T) {
	alice := identity.Principal{ID: "alice", Kind: identity.KindUser, Attributes: []string{"group:readers", "scope:files.read"}}
	for _, c := range []struct {
		p        identity.Principal
		selector string
		want     bool
	}{
		{alice, "*", true},
		{alice, "user:alice", true},
		{alice, "agent:alice", false},
		{alice, "group:readers", true},
		{alice, "group:writers", false},
		{alice, "alice", false},
		{identity.Principal{}, "*", true},
		{identity.Principal{}, ":", false},
		{identity.Principal{}, "group:readers", false},
	} {
		if got := c.p.Matches(c.selector); got != c.want {
			t.Errorf("%s matches %q = %v, want %v", c.p, c.selector, got, c.want)
		}
	}
	if s := alice.String(); s != "user:alice" {
		t.Errorf("String = %q", s)
	}
	if s := (identity.Principal{}).String(); s != "anonymous" {
		t.Errorf("the zero principal is %q", s)
	}
}

// TestBounded: no credential makes a principal larger than the bounds.
func TestBounded(t *testing.T) {
	long := strings.Repeat("x", 1000)
	p := identity.Principal{ID: long, Kind: "user"}
	for range 100 {
		p.Attributes = append(p.Attributes, "group:"+long)
	}
	b := p.Bounded()
	if len(b.ID) != identity.MaxPrincipalBytes || len(b.Attributes) != identity.MaxAttributes || len(b.Attributes[0]) != identity.MaxPrincipalBytes {
		t.Errorf("bounded: id %d bytes, %d attributes of %d bytes", len(b.ID), len(b.Attributes), len(b.Attributes[0]))
	}
	if len(p.Attributes) != 100 || len(p.ID) != 1000 {
		t.Error("Bounded changed its receiver")
	}
}
