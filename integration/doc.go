// Package integration holds no code: its subdirectories hold intentfs's
// end-to-end tests, which mount real filesystems and drive real tools
// through them, one package per feature, each runnable alone
// (go test ./integration/fence/):
//
//   - fence: the scope fence at every system call (creates, renames,
//     links, xattrs, locks, open flags, descriptors, caches, atomic saves)
//   - git: the commit gate, intentfs check, git notes, signing, blame
//   - upstream: git's upstream objects and refs written outside the scope
//   - sessions: agent sessions, users, worktrees, enforcement, doctor
//   - agents: agent hooks, real agent CLIs, containers, the intent
//     workflow, approvals, accept, revert
//   - cli: the CLI's commands, the control socket and files, reloads and
//     the source watchers
//   - observe: intentfs observe, the web UI, OpenTelemetry export
//
// testenv holds what they share: the mounted test environment, running
// commands as the agent's uid, polls of the ledger, git and CLI helpers,
// and testenv.Main, every package's TestMain. bench is the benchmark
// harness.
//
// The tests need root and /dev/fuse; where these are missing they skip,
// unless INTENTFS_REQUIRE_FUSE=1, in which case they fail.
//
// The tests run in parallel: each starts with testenv.Parallel(t) (which
// calls t.Parallel) and keeps to its own temporary directories, mounts
// and registry. The daemons run in the test process, so a test that
// changes or measures what the process or the machine shares (umask,
// descriptor limit, descriptor count, memory, the host's mount table) or
// asserts a latency stays serial: it starts with testenv.Serial(t), and
// says why in a "// Serial:" line at its top. So does every test that
// starts an agent session: a session's mount namespace copies every mount
// there is, and keeps the other tests' mounts served after their unmount
// until it ends. go test runs a package's serial tests before its
// parallel ones, and go test ./... runs several packages at once: a
// serial test holds a lock that keeps every other package's integration
// tests waiting until it ends, so it runs alone on the machine.
package integration
