package kernel

// Listen adds a listener that belongs to the host rather than to a plugin
// scope (plugins use Scope.On); the caller must call remove. The host uses
// it to follow EventStateChanged.
func (ev *Events) Listen(event, owner string, h Handler) (remove func()) {
	return ev.add(event, owner, h)
}
