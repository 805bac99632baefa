// Package integration holds intentfs's end-to-end tests, which mount real
// filesystems and drive real tools through them. They need root and
// /dev/fuse; where these are missing they skip, unless
// INTENTFS_REQUIRE_FUSE=1, in which case they fail.
//
// The tests run in parallel: each starts with t.Parallel() and keeps to
// its own temporary directories, mounts and registry. The daemons run in
// the test process, so a test that changes or measures what the process
// shares (umask, descriptor limit, descriptor count, memory, the host's
// mount table) or asserts a latency stays serial and says why in a
// "// Serial:" line at its top; serial tests run before the parallel
// ones, alone. So does every test that starts an agent session: a
// session's mount namespace copies every mount there is, and keeps the
// other tests' mounts served after their unmount until it ends.
package integration
