package sdk

// ForAnyArguments tells the host, in the visibility question
// (Call.Visibility), that the answer the listener or guard is giving holds
// for every call of the tool by the principal, whatever its arguments: the
// Allow or Ask it returns, its Pass, or a guard's empty reason. `host
// replay` then judges a call recorded without its arguments by it. Without
// it the answer counts as one that depends on the arguments (a Deny, or a
// guard's reason, needs no mark: it is for every call already). Outside
// the visibility question it does nothing.
func (c *Call) ForAnyArguments() {
	if c.Visibility() {
		c.anyArgs.Store(true)
	}
}

// AnsweredForAnyArguments reports whether a handler called ForAnyArguments
// on c: what the SDK tells the host, and what a plugin's own tests check.
func (c *Call) AnsweredForAnyArguments() bool { return c.anyArgs.Load() }
