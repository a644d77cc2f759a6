// Package tokenexchange obtains, on the host, the access token a call
// presents to a bridged upstream (a plugin's config `auth` block), so that
// the caller's identity reaches the upstream without its own token ever
// leaving the host:
//
//   - token_exchange (RFC 8693): the calling principal's validated access
//     token (from mcp_auth oauth) is exchanged at the configured token
//     endpoint for a token whose audience is the upstream (and scope as
//     configured); the principal's token goes to that endpoint only;
//   - client_credentials (RFC 6749 §4.4): the gateway's own identity, for
//     upstreams that do not know users.
//
// A Broker caches each token per principal (and per subject token) and
// upstream until shortly before it expires, and runs one request for
// concurrent calls that need the same token. A failure is an error naming
// the upstream and the reason; the caller denies the call (there is no
// fallback to a static identity).
//
// The principal's token travels in the call's context (WithSubjectToken),
// never in anything a stage, a log, a trace or the audit sees; the token
// obtained goes to the one plugin serving the call, as the call's
// upstream_token.
package tokenexchange
