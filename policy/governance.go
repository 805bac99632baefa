package policy

// Governance reports whether rel, a clean workspace-relative path, is a
// governance path: the policy and ignore files, intentfs's own state, or
// anything in a git directory. No owned_scope glob grants these the way
// it grants ordinary paths (the built-in protections decide them first),
// so a proposed scope never names them.
func Governance(rel string) bool {
	if classify(OpCreate, rel) != classOrdinary {
		return true
	}
	for _, f := range IgnoreFiles() {
		if rel == f {
			return true
		}
	}
	return false
}
