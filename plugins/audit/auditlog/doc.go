// Package auditlog writes and verifies plugkit's audit log: one JSON object
// per line, one line per tool call, each line chained to the one before it
// by a SHA-256 hash, so that changing, deleting, inserting or reordering a
// line is reported at that line. It depends only on the standard library, so
// the host's CLI and other tools can import it.
//
// # Line format
//
// A line is a JSON object in canonical form (below) followed by "\n":
//
//	{"seq":1,"time":"2026-05-04T10:20:30.123456789Z","id":"c-1","caller":"cli","tool":"add","ok":true,"code":"","decided_by":"","duration_ms":1.25,"args_sha256":"…64 hex…","prev":"000…000","hash":"…64 hex…"}
//
// Members, in this order, all of them but principal, principal_kind,
// arguments, shadow, approval, elicitations and principal_attributes
// always:
//
//	seq          integer, 1 on the first line, +1 on each next line
//	time         when the line was written, RFC 3339 in UTC with nanoseconds
//	             (Go's time.RFC3339Nano: "Z", trailing zeros of the fraction dropped)
//	id           the call's id
//	caller       the client or plugin that made the call
//	principal    only when the call was made for someone: who (a user
//	             name, an API key's name, a token's subject)
//	principal_kind  with principal: user, agent, service or local
//	tool         the tool name as the caller asked for it
//	ok           true when the call succeeded
//	code         "" on success, else the result code (DENIED, TOOL_ERROR, …)
//	decided_by   the plugin or rule that denied or blocked the call, or ""
//	duration_ms  the call's duration in milliseconds: a decimal number with
//	             at most 6 fraction digits (exact nanoseconds), no trailing
//	             zeros after the point, no point when whole, no exponent
//	args_sha256  lowercase hex SHA-256 of the call's argument bytes exactly as
//	             the host sent them (its canonical JSON; none, so the digest
//	             of nothing, e3b0c442…b855, when the call failed before
//	             they were checked: UNKNOWN_TOOL, INVALID_ARGUMENTS)
//	arguments    only when arguments are recorded: those bytes as JSON, with
//	             insignificant space removed; bytes that are not valid JSON
//	             are recorded as a JSON string of them
//	shadow       only when a listener in shadow objected to the call: what
//	             each would have decided and did not, in the order they
//	             were asked, each an object with every member, in this
//	             order: stage (1 or 2), plugin, rule ("" when none was
//	             named), would (DENIED or ASK), reason
//	approval     only when an approval route decided the call's Ask: a JSON
//	             object (compact) naming the request, route, approvers,
//	             quorum, state (approved, denied, timed_out, withdrawn), the
//	             reason, and each answer with who gave it, when, and why it
//	             was refused when it did not count
//	elicitations only when a plugin asked the caller something during the
//	             call: a JSON array (compact) of each question's mode and the
//	             caller's action, in order
//	principal_attributes  with principal, on lines written since it is
//	             recorded: the principal's attributes, what rules select
//	             principals by ("group:canary"), an array of strings in the
//	             order the credential gave them ([] when it gave none)
//	prev         the previous line's hash; 64 "0" on the first line
//	hash         this line's hash (below), 64 lowercase hex digits
//
// # Canonical form
//
// No space between tokens. Members in the order above. Integers in decimal
// without leading zeros. Strings in double quotes, with '"' written \", '\\'
// written \\, newline, carriage return and tab written \n, \r and \t, other
// bytes below 0x20 written \u00XX (lowercase hex), invalid UTF-8 written as
// U+FFFD, and everything else as UTF-8 bytes as they are (no \u escapes,
// no "\/"). Verify re-encodes every line it reads and reports one that is not
// byte for byte in this form, so a line has exactly one spelling and the hash
// covers every byte of it.
//
// # Hash chain
//
//	body(n) = line n's canonical JSON without the hash member:
//	          the bytes up to and including the prev value's closing quote,
//	          then "}"
//	hash(n) = lowercase hex of SHA-256( prev(n) || body(n) ), where prev(n)
//	          is taken as its 64 ASCII hex characters
//	prev(1) = "0000000000000000000000000000000000000000000000000000000000000000"
//	prev(n) = hash(n-1)
//	line(n) = body(n) without its final "}", then `,"hash":"`, hash(n), `"}`, "\n"
//
// prev is inside body as well as before it: the line states what it follows,
// and the hash is still defined over nothing but bytes of the file. With a
// shell, line 2 of a log checks as:
//
//	prev=$(sed -n 1p audit.log | sed 's/.*"hash":"\([0-9a-f]*\)"}$/\1/')
//	body=$(sed -n 2p audit.log | sed 's/,"hash":"[0-9a-f]*"}$/}/')
//	printf '%s%s' "$prev" "$body" | sha256sum   # equals line 2's hash
//
// # What the chain shows, and what it does not
//
// Verify reports the first line that is not valid JSON in canonical form,
// whose seq does not follow, whose prev is not the hash of the line before,
// or whose hash does not match its content. A deleted, inserted, duplicated
// or moved line breaks seq or prev at the first line out of place.
//
// The chain cannot show lines cut off the end of the log, nor a log whose
// whole tail (or whole content) was rewritten with fresh hashes by someone
// who can write the file: the hashes use no secret. Compare the log's Tip
// with one recorded elsewhere (the audit plugin logs it when it opens and
// closes the log) to detect those.
package auditlog
