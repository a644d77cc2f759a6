package kernel

// State is where a plugin scope is in its life.
type State int32

// The states a scope moves through: PENDING → LOADING → ACTIVE → UNLOADING →
// DISPOSED, or FAILED when its apply step fails.
const (
	Pending State = iota
	Loading
	Active
	Unloading
	Disposed
	Failed
)

var stateNames = [...]string{"PENDING", "LOADING", "ACTIVE", "UNLOADING", "DISPOSED", "FAILED"}

func (s State) String() string {
	if s < 0 || int(s) >= len(stateNames) {
		return "UNKNOWN"
	}
	return stateNames[s]
}

// EventStateChanged is emitted (see Events.Emit) with a StateChange payload
// each time a scope changes state. Its listeners run during the transition:
// they may read the kernel (Kernel.Scope, Kernel.Describe) but must not load,
// unload or restart plugins.
const EventStateChanged = "kernel/state"

// StateChange is the payload of EventStateChanged. A reload of an active
// plugin (Kernel.Reload) is one change from ACTIVE to ACTIVE: the new
// version took over without the plugin leaving ACTIVE.
type StateChange struct {
	Plugin string
	From   State
	To     State
	// Err is the apply error when To is FAILED, nil otherwise.
	Err error
}
