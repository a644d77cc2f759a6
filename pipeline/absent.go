package pipeline

import (
	"sync"

	"github.com/plugkit-go/plugkit/shared/wire"
)

// A tool whose plugin is restarting or failed is marked absent, so that a
// call of it says why instead of that it does not exist; its name stays
// reserved for its plugin meanwhile. The tool is kept as it was
// registered, for the visibility question (see visible).

// MarkAbsent says why a tool is missing while it is missing: a call to it
// fails at once as TOOL_ERROR with reason (say, that its plugin is
// restarting) instead of UNKNOWN_TOOL, until release is called. A
// registered tool of that name takes precedence. The visibility question
// is asked of it by its name alone (see MarkAbsentTool).
func (t *Tools) MarkAbsent(tool, reason string) (release func()) {
	return t.MarkAbsentTool(ToolInfo{ToolDescriptor: wire.ToolDescriptor{Name: tool}}, reason)
}

// MarkAbsentTool is MarkAbsent for a tool known as it was registered: the
// visibility question is asked of it as of the registered tool, so that a
// tool hidden from a principal stays hidden (a call of it answered as one
// of a tool that does not exist) while it is missing, and a shown one is
// told why it is missing.
func (t *Tools) MarkAbsentTool(info ToolInfo, reason string) (release func()) {
	remove, _ := t.k.Points().Add(PointAbsent, info.Name, 0, absence{reason: reason, info: info}, "host")
	var once sync.Once
	return func() { once.Do(remove) }
}

// absence is a tool marked absent: why, and the tool as it was.
type absence struct {
	reason string
	info   ToolInfo
}

// Reserve keeps a tool's name for owner, the plugin that declared it, while
// that plugin cannot hold it (restarting, failed, reloading): a call to it
// fails at once as TOOL_ERROR with why (as MarkAbsent), and another plugin's
// registration of that name is refused with an error that names owner,
// logged once per plugin refused, until release is called. owner's own
// registration of it is accepted.
func (t *Tools) Reserve(tool, owner, why string) (release func()) {
	return t.ReserveTool(ToolInfo{ToolDescriptor: wire.ToolDescriptor{Name: tool, Owner: owner}}, why)
}

// ReserveTool is Reserve for a tool known as it was registered (info.Owner
// the plugin that declared it), whose visibility is then asked as of the
// registered tool (see MarkAbsentTool).
func (t *Tools) ReserveTool(info ToolInfo, why string) (release func()) {
	unmark := t.MarkAbsentTool(info, why)
	unreserve := t.k.Points().Reserve(PointTools, info.Name, info.Owner, why)
	var once sync.Once
	return func() {
		once.Do(func() {
			unreserve()
			unmark()
		})
	}
}
