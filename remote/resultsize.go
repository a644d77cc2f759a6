package remote

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"github.com/plugkit-go/plugkit/pipeline"
	"github.com/plugkit-go/plugkit/shared/pb"
)

// DefaultMaxResultBytes is a plugin's max_result_bytes when the deployment
// sets none: the largest result one of its tools may return, and the largest
// value its stage-5 observers receive whole.
//
// Why a limit: one result is held by the host, handed to every stage-4
// listener and sent to every observer process, each of which decodes it. A
// 60 MB result took an audit plugin limited to 256 MiB past its memory by
// itself; resent to the next process, the same result crashed it again.
const DefaultMaxResultBytes = 16 << 20

// resultHeadBytes is how much of an omitted value an observer receives.
const resultHeadBytes = 1 << 10

// maxResult is the plugin's max_result_bytes.
func (s Spec) maxResult() int {
	if s.MaxResultBytes > 0 {
		return s.MaxResultBytes
	}
	return DefaultMaxResultBytes
}

// tooLarge is the TOOL_ERROR of a result of n bytes from the tool name of
// in, when n is past the plugin's limit; nil otherwise. It is checked where
// the result arrives from the process, so no listener ever sees the value.
func (in *instance) tooLarge(what string, n int) *pipeline.Error {
	limit := in.spec.maxResult()
	if n <= limit {
		return nil
	}
	return &pipeline.Error{Code: pipeline.CodeToolError, Message: fmt.Sprintf(
		"%s returned a result of %d bytes, over the max_result_bytes limit of %d bytes of plugin %s", what, n, limit, in.name)}
}

// observed is r as an observer allowed limit bytes of a value receives it:
// a larger value arrives as its size, digest and head (pb.ToolResult's
// value_omitted), so that the observer can still record the call.
func observed(r pipeline.Result, limit int) *pb.ToolResult {
	m := ToResult(r)
	if v := m.GetValueJson(); limit > 0 && len(v) > limit {
		sum := sha256.Sum256(v)
		m.ValueJson = nil
		m.ValueOmitted = true
		m.ValueSize = int64(len(v))
		m.ValueSha256 = hex.EncodeToString(sum[:])
		m.ValueHead = v[:min(len(v), resultHeadBytes, limit)]
	}
	return m
}
