package testenv

// AsAgent1000 runs script in the mount as uid 1000 and returns its output.
func (e *Env) AsAgent1000(script string) (string, error) { return e.ShAs(AgentUID, AgentGID, script) }
