package wire

import (
	"time"

	"github.com/plugkit-go/plugkit/shared/pb"
)

// This file is the one place that converts between the plain Go values of
// types.go and the generated messages of package pb. Each pair is covered by a
// round-trip test. FromProto functions accept nil and return the zero value,
// so a field missing on the wire never panics a reader.

// ToolDescriptorToProto converts d; the zero descriptor becomes nil (absent).
func ToolDescriptorToProto(d ToolDescriptor) *pb.ToolDescriptor {
	if isZeroDescriptor(d) {
		return nil
	}
	return &pb.ToolDescriptor{
		Name:           d.Name,
		Description:    d.Description,
		ParametersJson: d.Parameters,
		Destructive:    d.Destructive,
		ReadOnly:       d.ReadOnly,
		Idempotent:     d.Idempotent,
		TimeoutMs:      durationToMillis(d.Timeout),
		Owner:          d.Owner,
		Notes:          d.Notes,
		Held:           d.Held,
		Definition:     d.Definition,
		OwnerPrefix:    d.OwnerPrefix,
		Kind:           d.Kind,
	}
}

// ToolDescriptorFromProto converts m.
func ToolDescriptorFromProto(m *pb.ToolDescriptor) ToolDescriptor {
	if m == nil {
		return ToolDescriptor{}
	}
	return ToolDescriptor{
		Name:        m.GetName(),
		Description: m.GetDescription(),
		Parameters:  m.GetParametersJson(),
		Destructive: m.GetDestructive(),
		ReadOnly:    m.GetReadOnly(),
		Idempotent:  m.GetIdempotent(),
		Timeout:     time.Duration(m.GetTimeoutMs()) * time.Millisecond,
		Owner:       m.GetOwner(),
		Notes:       m.GetNotes(),
		Held:        m.GetHeld(),
		Definition:  m.GetDefinition(),
		OwnerPrefix: m.GetOwnerPrefix(),
		Kind:        m.GetKind(),
	}
}

// ExecutionToProto converts e.
func ExecutionToProto(e Execution) *pb.Execution {
	return &pb.Execution{
		Id:               e.ID,
		Name:             e.Name,
		ArgumentsJson:    e.Arguments,
		Caller:           e.Caller,
		Tool:             ToolDescriptorToProto(e.Tool),
		Principal:        PrincipalToProto(e.Principal),
		DryRun:           e.DryRun,
		ApprovalJson:     e.Approval,
		ElicitationsJson: e.Elicitations,
		Visibility:       e.Visibility,
	}
}

// PrincipalToProto converts p; the zero principal is nil.
func PrincipalToProto(p Principal) *pb.Principal {
	if p.ID == "" && p.Kind == "" && len(p.Attributes) == 0 {
		return nil
	}
	return &pb.Principal{Id: p.ID, Kind: p.Kind, Attributes: p.Attributes}
}

// PrincipalFromProto converts m; nil is the zero principal.
func PrincipalFromProto(m *pb.Principal) Principal {
	if m == nil {
		return Principal{}
	}
	return Principal{ID: m.GetId(), Kind: m.GetKind(), Attributes: m.GetAttributes()}
}

// ExecutionFromProto converts m.
func ExecutionFromProto(m *pb.Execution) Execution {
	if m == nil {
		return Execution{}
	}
	return Execution{
		ID:           m.GetId(),
		Name:         m.GetName(),
		Arguments:    m.GetArgumentsJson(),
		Caller:       m.GetCaller(),
		Tool:         ToolDescriptorFromProto(m.GetTool()),
		Principal:    PrincipalFromProto(m.GetPrincipal()),
		DryRun:       m.GetDryRun(),
		Approval:     m.GetApprovalJson(),
		Elicitations: m.GetElicitationsJson(),
		Visibility:   m.GetVisibility(),
	}
}

// ToolErrorToProto converts e; nil stays nil.
func ToolErrorToProto(e *ToolError) *pb.ToolError {
	if e == nil {
		return nil
	}
	return &pb.ToolError{Code: string(e.Code), Message: e.Message}
}

// ToolErrorFromProto converts m; nil stays nil.
func ToolErrorFromProto(m *pb.ToolError) *ToolError {
	if m == nil {
		return nil
	}
	return &ToolError{Code: Code(m.GetCode()), Message: m.GetMessage()}
}

// ToolResultToProto converts r.
func ToolResultToProto(r ToolResult) *pb.ToolResult {
	m := &pb.ToolResult{
		Id:         r.ID,
		Ok:         r.OK,
		ValueJson:  r.Value,
		Error:      ToolErrorToProto(r.Error),
		DecidedBy:  r.DecidedBy,
		DurationNs: int64(r.Duration),
	}
	for _, d := range r.Shadow {
		m.Shadow = append(m.Shadow, &pb.ShadowDecision{Stage: int32(d.Stage), Plugin: d.Plugin, Rule: d.Rule, Would: d.Would, Reason: d.Reason})
	}
	if o := r.Omitted; o != nil {
		m.ValueJson = nil
		m.ValueOmitted, m.ValueSize, m.ValueSha256, m.ValueHead = true, o.Size, o.SHA256, o.Head
	}
	return m
}

// ToolResultFromProto converts m.
func ToolResultFromProto(m *pb.ToolResult) ToolResult {
	if m == nil {
		return ToolResult{}
	}
	r := ToolResult{
		ID:        m.GetId(),
		OK:        m.GetOk(),
		Value:     m.GetValueJson(),
		Error:     ToolErrorFromProto(m.GetError()),
		DecidedBy: m.GetDecidedBy(),
		Duration:  time.Duration(m.GetDurationNs()),
	}
	for _, d := range m.GetShadow() {
		r.Shadow = append(r.Shadow, ShadowDecision{Stage: int(d.GetStage()), Plugin: d.GetPlugin(), Rule: d.GetRule(), Would: d.GetWould(), Reason: d.GetReason()})
	}
	if m.GetValueOmitted() {
		r.Value = nil
		r.Omitted = &OmittedValue{Size: m.GetValueSize(), SHA256: m.GetValueSha256(), Head: m.GetValueHead()}
	}
	return r
}

// OutcomeToProto converts o.
func OutcomeToProto(o Outcome) *pb.Outcome {
	return &pb.Outcome{Ok: o.OK, ValueJson: o.Value, Error: ToolErrorToProto(o.Error)}
}

// OutcomeFromProto converts m.
func OutcomeFromProto(m *pb.Outcome) Outcome {
	if m == nil {
		return Outcome{}
	}
	return Outcome{OK: m.GetOk(), Value: m.GetValueJson(), Error: ToolErrorFromProto(m.GetError())}
}

// DecisionToProto converts d.
func DecisionToProto(d Decision) *pb.Decision {
	return &pb.Decision{Verdict: pb.Verdict(d.Verdict), Reason: d.Reason, Rule: d.Rule, Route: d.Route}
}

// DecisionFromProto converts m; a missing decision is VerdictUnspecified.
func DecisionFromProto(m *pb.Decision) Decision {
	if m == nil {
		return Decision{}
	}
	return Decision{Verdict: Verdict(m.GetVerdict()), Reason: m.GetReason(), Rule: m.GetRule(), Route: m.GetRoute()}
}

// ReviewToProto converts r.
func ReviewToProto(r Review) *pb.Review {
	return &pb.Review{Verdict: pb.ReviewVerdict(r.Verdict), ValueJson: r.Value, Feedback: r.Feedback}
}

// ReviewFromProto converts m; a missing review is ReviewUnspecified.
func ReviewFromProto(m *pb.Review) Review {
	if m == nil {
		return Review{}
	}
	return Review{Verdict: ReviewVerdict(m.GetVerdict()), Value: m.GetValueJson(), Feedback: m.GetFeedback()}
}

// ApprovalToProto converts a into the answer half of an ApproveResponse.
func ApprovalToProto(a Approval) *pb.ApproveResponse {
	return &pb.ApproveResponse{Approved: a.Approved, Reason: a.Reason}
}

// ApprovalFromProto reads the answer half of an ApproveResponse (its error
// field is the caller's to check).
func ApprovalFromProto(m *pb.ApproveResponse) Approval {
	return Approval{Approved: m.GetApproved(), Reason: m.GetReason()}
}

// durationToMillis rounds up, so that 500µs stays a timeout (1ms) instead of
// becoming 0, which means "none".
func durationToMillis(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return int64((d + time.Millisecond - 1) / time.Millisecond)
}

func isZeroDescriptor(d ToolDescriptor) bool {
	return d.Name == "" && d.Description == "" && len(d.Parameters) == 0 &&
		!d.Destructive && !d.ReadOnly && !d.Idempotent && d.Timeout == 0 && d.Owner == "" &&
		len(d.Notes) == 0 && d.Held == "" && d.Definition == "" && !d.OwnerPrefix && d.Kind == ""
}
