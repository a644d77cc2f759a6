// Package identity is who a call is made for, as the host and plugins both
// see it: a Principal, and the selectors policies name principals with.
// The host's pipeline and the plugin SDK share it, so that a rule means the
// same thing in a plugin as in the host.
package identity

import "slices"

// Principal is who a call is made for: the OS user behind the admin
// socket, the user who started an MCP stdio session, whoever an HTTP
// client's credential names. Every stage of the pipeline sees it, remote
// listeners too, and the audit log records it.
type Principal struct {
	// ID is the subject: a user name, a key's name, a token's sub.
	ID string
	// Kind is one of the Kind constants.
	Kind string
	// Attributes are what the credential says about the principal that
	// policies may use, each "key:value" ("group:readers",
	// "scope:files.write", "uid:1000"), at most MaxAttributes of them.
	Attributes []string
}

// The kinds of principal.
const (
	KindUser    = "user"    // a person
	KindAgent   = "agent"   // an automated client acting on its own
	KindService = "service" // a plugin or another service calling a tool
	KindLocal   = "local"   // an OS user on this machine (admin socket, MCP stdio)
)

// Bounds of a principal, so that no credential can make every call of its
// bearer expensive to carry and record.
const (
	MaxAttributes     = 32
	MaxPrincipalBytes = 256 // each of ID, Kind and every attribute
)

// Anonymous is the principal of a call made without one (a library
// caller that did not say): it matches no selector but "*".
var Anonymous = Principal{}

// Bounded returns p cut to the bounds: attributes past MaxAttributes are
// dropped and every string is cut at MaxPrincipalBytes.
func (p Principal) Bounded() Principal {
	cut := func(s string) string {
		if len(s) > MaxPrincipalBytes {
			return s[:MaxPrincipalBytes]
		}
		return s
	}
	out := Principal{ID: cut(p.ID), Kind: cut(p.Kind)}
	if len(p.Attributes) > 0 {
		out.Attributes = make([]string, 0, min(len(p.Attributes), MaxAttributes))
		for _, a := range p.Attributes[:min(len(p.Attributes), MaxAttributes)] {
			out.Attributes = append(out.Attributes, cut(a))
		}
	}
	return out
}

// String is "kind:id", or "anonymous".
func (p Principal) String() string {
	if p.ID == "" && p.Kind == "" {
		return "anonymous"
	}
	return p.Kind + ":" + p.ID
}

// Matches reports whether selector names p: "*" names everyone, "KIND:ID"
// ("user:alice", "local:root") the principal itself, and any other
// "key:value" ("group:readers") one of its attributes.
func (p Principal) Matches(selector string) bool {
	switch {
	case selector == "*":
		return true
	case p.ID == "" && p.Kind == "":
		return false
	case selector == p.Kind+":"+p.ID:
		return true
	}
	return slices.Contains(p.Attributes, selector)
}
