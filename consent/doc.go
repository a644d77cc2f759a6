// Package consent obtains, on the host, the upstream token of a bridged
// server whose auth block is user_consent: each user (principal) consents
// once, in a browser, at the upstream's own authorization server.
//
// The authorization server is found from the upstream: the
// WWW-Authenticate resource_metadata of its 401 (or RFC 9728's well-known
// address), then the authorization server's RFC 8414 (or OpenID)
// metadata. The host identifies itself with the deployment's client_id,
// else a client ID metadata document it serves at its callback listener,
// else RFC 7591 dynamic registration where that is all the server offers.
// The flow is the authorization code grant with PKCE (S256), the RFC 8707
// resource, the deployment's scopes, and a state that is random, used
// once, and bound to the principal, the plugin and the call that asked.
//
// A call of a principal with no token gets a *Needed error carrying the
// authorization URL; a caller that can be asked with it waits for the
// consent (Await). The browser comes back to Handler, on any replica when
// the vault is shared, which checks the state, exchanges the code, keeps
// the token in the vault and wakes the waiting call. Tokens
// are refreshed shortly before they expire, one refresh per principal and
// plugin at a time. No token is ever logged or put in an error.
package consent
