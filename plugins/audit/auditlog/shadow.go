package auditlog

import "strconv"

// Shadow is what one listener in shadow would have decided on a call: its
// Deny, Ask or failure, which the host did not apply.
type Shadow struct {
	// Stage is 1 (pre-execute) or 2 (guards).
	Stage  int    `json:"stage"`
	Plugin string `json:"plugin"`
	// Rule is the rule the listener named, "" when it named none.
	Rule string `json:"rule"`
	// Would is DENIED or ASK.
	Would  string `json:"would"`
	Reason string `json:"reason"`
}

// appendShadow writes the shadow member's value in canonical form: every
// member of each decision, in the order of the struct, so that there is
// one spelling.
func appendShadow(b []byte, ds []Shadow) []byte {
	b = append(b, '[')
	for i, d := range ds {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"stage":`...)
		b = strconv.AppendInt(b, int64(d.Stage), 10)
		b = append(b, `,"plugin":`...)
		b = appendString(b, d.Plugin)
		b = append(b, `,"rule":`...)
		b = appendString(b, d.Rule)
		b = append(b, `,"would":`...)
		b = appendString(b, d.Would)
		b = append(b, `,"reason":`...)
		b = appendString(b, d.Reason)
		b = append(b, '}')
	}
	return append(b, ']')
}
