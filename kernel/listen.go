package kernel

import "context"

// Listen adds a listener that belongs to the host rather than to a plugin
// scope (plugins use Scope.On); the caller must call remove. The host uses
// it to follow EventStateChanged.
func (ev *Events) Listen(event, owner string, h Handler) (remove func()) {
	return ev.add(event, owner, h)
}

// OnStateChange adds a host listener, as owner, for every plugin's state
// change (EventStateChanged), given its payload typed; the caller must call
// remove. fn runs while the change is being made and must not block.
func (ev *Events) OnStateChange(owner string, fn func(StateChange)) (remove func()) {
	return ev.add(EventStateChanged, owner, func(_ context.Context, payload any, _ Next) (any, error) {
		// Only the kernel emits this event, always with a StateChange.
		if sc, ok := payload.(StateChange); ok {
			fn(sc)
		}
		return nil, nil
	})
}
