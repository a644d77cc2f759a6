package mcpserver

import (
	"bytes"
	"encoding/json"
)

// Every result of a bridged tool is checked for the MCP shape (mcpShaped)
// before it is decoded as a CallToolResult. Decoding the value into a map
// only to read its member names cost as much again as the decode itself
// (7.6% of the host's CPU under bench-peers); shapedMembers reads the
// names from the bytes instead, and falls back to the map for a name
// written with an escape.

// shapedMembers says whether v, an object (possibly malformed: the decode
// that follows refuses that), has a "content" that is an array and no
// member but "content" and "structuredContent", of a member given twice
// the last counting, as encoding/json reads it into a map. known is false
// when a member name holds an escape: shapedByMap must say.
func shapedMembers(v []byte) (shaped, known bool) {
	const (
		other = iota
		content
	)
	depth := 0
	expectKey, awaitValue := false, false
	member := other
	hasContent, contentArray := false, false
	value := func(array bool) {
		if member == content {
			hasContent, contentArray = true, array
		}
		awaitValue = false
	}
	for i := 0; i < len(v); i++ {
		switch c := v[i]; c {
		case ' ', '\t', '\r', '\n', ':':
		case '"':
			end := stringEnd(v, i+1)
			if end < 0 {
				return false, true // not JSON
			}
			switch {
			case depth == 1 && expectKey:
				key := v[i+1 : end]
				if bytes.IndexByte(key, '\\') >= 0 {
					return false, false
				}
				switch string(key) {
				case "content":
					member = content
				case "structuredContent":
					member = other
				default:
					return false, true
				}
				expectKey, awaitValue = false, true
			case depth == 1 && awaitValue:
				value(false)
			}
			i = end
		case '{', '[':
			if depth == 1 && awaitValue {
				value(c == '[')
			}
			depth++
			expectKey = c == '{' && depth == 1
		case '}', ']':
			depth--
		case ',':
			expectKey = depth == 1
		default: // a number or a literal
			if depth == 1 && awaitValue {
				value(false)
			}
		}
	}
	return hasContent && contentArray, true
}

// shapedByMap is shapedMembers by decoding v's members into a map.
func shapedByMap(v []byte) bool {
	var fields map[string]json.RawMessage
	if json.Unmarshal(v, &fields) != nil {
		return false
	}
	content, ok := fields["content"]
	if !ok || len(fields) > 2 || (len(fields) == 2 && fields["structuredContent"] == nil) {
		return false
	}
	c := bytes.TrimSpace(content)
	return len(c) > 0 && c[0] == '['
}
