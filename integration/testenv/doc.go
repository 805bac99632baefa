// Package testenv is what intentfs's end-to-end test packages (the
// feature packages under integration/) share: Env, a source tree mounted
// through a daemon running in the test process (Mount, MountAt, MountPrepared);
// ShAs, which runs a script as the agent's unprivileged uid; WaitRecord
// and WaitFor, which poll rather than sleep; ChownTree; git and CLI
// helpers (CLI, CLIBinary, which builds cmd/intentfs once per test
// binary from the module root); and Main, the TestMain of every
// feature package.
//
// RequireFUSE skips a test where root or /dev/fuse is missing, and
// SkipOrFail one whose setup the machine refused; under
// INTENTFS_REQUIRE_FUSE=1 both fail it instead.
package testenv
