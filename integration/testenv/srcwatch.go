package testenv

// Lookups counts the requests that would show the kernel did not keep
// what it knew.
func (e *Env) Lookups() uint64 {
	ops := e.D.Status().Ops
	return ops["LOOKUP"] + ops["GETATTR"]
}
